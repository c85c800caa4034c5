# SPDX-License-Identifier: BSD-3-Clause
# An application's plain Makefile using an installed libhixl-ucx
# (test/it_install.sh: make -f consumer.mk HIXL_PREFIX=<prefix>).  The
# rpath lets the program find libhixl-ucx.so under a custom prefix without
# LD_LIBRARY_PATH.
HIXL_PREFIX ?= /usr/local
HIXL_LIBDIR ?= $(HIXL_PREFIX)/lib
CPPFLAGS += -I$(HIXL_PREFIX)/include
LDFLAGS  += -L$(HIXL_LIBDIR) -Wl,-rpath,$(HIXL_LIBDIR)
LDLIBS   += -lhixl-ucx

consumer: consumer.c
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LDLIBS)
