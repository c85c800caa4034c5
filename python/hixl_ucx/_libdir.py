LIBDIR = '/usr/local/lib'
