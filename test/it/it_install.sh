#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# An installed libhixl-ucx, used the ways an application uses it.
#
#   make check       stages `make install DESTDIR=<tmp>` of this build tree
#   make installcheck (HIXL_INSTALLED=1) uses the real installation in
#                    $prefix, as `make distcheck` does after its install
#
# Then builds and runs test/install/consumer.c (two engines, 1 MiB moved,
# every byte checked) against it, with:
#   - pkg-config (cflags/libs, rpath from its libdir);
#   - pkg-config --static against libhixl-ucx.a alone: the .pc must name
#     everything the static library needs (UCX, libcrypto, threads); the
#     program must not load libhixl-ucx.so;
#   - a plain Makefile (test/install/consumer.mk);
#   - CMake: find_package(hixl-ucx) and hixl-ucx::hixl-ucx (and -static);
# and checks that the man pages and the Python module are installed (the
# module where $PYTHON looks when configure found such a directory).
# SKIP (77) for the CMake part alone when cmake is missing (Debian: cmake),
# reported at the end after everything else ran.
#
# Environment (test/Makefile.am): HIXL_TOP_BUILDDIR, HIXL_PREFIX,
# HIXL_LIBDIR, HIXL_INCLUDEDIR, HIXL_MANDIR, HIXL_PYTHONDIR, PYTHON, CC, and
# HIXL_LDFLAGS (a sanitized build's -fsanitize=...: programs linking the
# library need it too).
set -u
srcdir=${srcdir:-$(dirname "$0")/..}
srcdir=$(cd "$srcdir" && pwd)
: "${HIXL_PREFIX:?}" "${HIXL_LIBDIR:?}" "${HIXL_INCLUDEDIR:?}"
CC=${CC:-cc}
san=${HIXL_LDFLAGS:-}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/it_install.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP

if [ "${HIXL_INSTALLED:-0}" = 1 ]; then
    root=                                   # the real installation
    echo "installed copy in $HIXL_PREFIX"
else
    root=$tmp/stage
    : "${HIXL_TOP_BUILDDIR:?}"
    # the build's own install, staged; MAKEFLAGS of the calling make would
    # point at a jobserver this script does not have
    if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$HIXL_TOP_BUILDDIR" \
            install DESTDIR="$root" >"$tmp/install.log" 2>&1; then
        tail -n 30 "$tmp/install.log"
        echo "FAIL: make install DESTDIR=$root"
        exit 1
    fi
    echo "staged make install in $root$HIXL_PREFIX"
fi
prefix=$root$HIXL_PREFIX
libdir=$root$HIXL_LIBDIR
includedir=$root$HIXL_INCLUDEDIR
export UCX_TLS=tcp                          # one process, loopback
rc=0
cp "$srcdir/install/consumer.c" "$srcdir/install/consumer.mk" \
   "$srcdir/install/CMakeLists.txt" "$tmp/"
cd "$tmp" || exit 99

# run ./$2 (named $1) and check that it loads libhixl-ucx from $libdir, or
# not at all when $3 = static
run_consumer() {
    what=$1
    exe=$2
    how=${3:-shared}
    loaded=$(ldd "$exe" 2>/dev/null | sed -n 's/.*libhixl-ucx[^ ]* => \([^ ]*\) .*/\1/p')
    if [ "$how" = static ]; then
        if [ -n "$loaded" ]; then
            echo "FAIL: $what: loads $loaded, expected libhixl-ucx linked in"
            rc=1
            return
        fi
    else
        case $loaded in
            "$libdir"/*) ;;
            *) echo "FAIL: $what: loads libhixl-ucx from '$loaded', not $libdir"
               rc=1
               return ;;
        esac
    fi
    if out=$(timeout 120 "./$exe" 2>&1); then
        echo "PASS: $what: $out"
    else
        echo "FAIL: $what: $out"
        rc=1
    fi
}

# ---- pkg-config --------------------------------------------------------------
if command -v pkg-config >/dev/null 2>&1; then
    # the installed hixl-ucx.pc, its directories moved to where the files
    # are (a staged install); other .pc files (ucx, libcrypto) untouched
    mkdir -p pc static/lib/pkgconfig
    sed -e "s|^libdir=.*|libdir=$libdir|" -e "s|^includedir=.*|includedir=$includedir|" \
        "$libdir/pkgconfig/hixl-ucx.pc" >pc/hixl-ucx.pc
    pc=pkg-config
    export PKG_CONFIG_PATH="$tmp/pc"
    if $CC $san consumer.c $($pc --cflags --libs hixl-ucx) \
           -Wl,-rpath,"$($pc --variable=libdir hixl-ucx)" -o consumer_pc \
           >"$tmp/cc.log" 2>&1; then
        run_consumer "pkg-config" consumer_pc
    else
        cat "$tmp/cc.log"
        echo "FAIL: pkg-config build"
        rc=1
    fi
    # only the static library in its libdir: the linker has to take it, so
    # the .pc alone must bring UCX, libcrypto and threads
    cp "$libdir/libhixl-ucx.a" static/lib/
    sed -e "s|^libdir=.*|libdir=$tmp/static/lib|" -e "s|^includedir=.*|includedir=$includedir|" \
        "$libdir/pkgconfig/hixl-ucx.pc" >static/lib/pkgconfig/hixl-ucx.pc
    libs=$(PKG_CONFIG_PATH=$tmp/static/lib/pkgconfig $pc --static --libs hixl-ucx)
    echo "pkg-config --static --libs hixl-ucx: $libs"
    if $CC $san consumer.c $($pc --cflags hixl-ucx) $libs -o consumer_static_pc \
           >"$tmp/cc.log" 2>&1; then
        run_consumer "pkg-config --static" consumer_static_pc static
    else
        cat "$tmp/cc.log"
        echo "FAIL: static link from pkg-config --static alone"
        rc=1
    fi
    unset PKG_CONFIG_PATH
else
    echo "note: no pkg-config: its use is not tested"
fi

# ---- a plain Makefile --------------------------------------------------------
if make -s -f consumer.mk HIXL_PREFIX="$prefix" HIXL_LIBDIR="$libdir" \
        CC="$CC" CFLAGS="$san" >"$tmp/make.log" 2>&1; then
    run_consumer "plain Makefile" consumer
else
    cat "$tmp/make.log"
    echo "FAIL: plain Makefile build"
    rc=1
fi

# ---- CANN hixl's C interface, under CANN's header names ---------------------
printf '#include <cs/hixl_cs.h>\n#include <hixl/hixl.h>\nint main(void) { HixlStatus s = HIXL_SUCCESS; HixlServerHandle h = 0; return (int)s + (HixlCSServerDestroy(h) == HIXL_PARAM_INVALID ? 0 : 1); }\n' > cs_consumer.c
if $CC $san -I"$includedir" cs_consumer.c -L"$libdir" -Wl,-rpath,"$libdir" \
       -lhixl-ucx -o cs_consumer >"$tmp/cs.log" 2>&1 && ./cs_consumer; then
    echo "PASS: cs/hixl_cs.h and hcomm/hcomm_res_defs.h installed, HixlCS* linked"
else
    echo "FAIL: CANN's C interface as installed:"; cat "$tmp/cs.log"
    rc=1
fi

# ---- installed files: man pages, Python module ---------------------------
for page in hixl_info put_bw pd_pipeline; do
    if [ -n "${HIXL_MANDIR:-}" ] && [ ! -f "$root$HIXL_MANDIR/man1/$page.1" ]; then
        echo "FAIL: man page $root$HIXL_MANDIR/man1/$page.1 not installed"
        rc=1
    fi
done
if [ -n "${HIXL_PYTHONDIR:-}" ] && [ -n "${PYTHON:-}" ] &&
   command -v "$PYTHON" >/dev/null 2>&1; then
    # a sanitized library needs the ASan runtime loaded before Python
    asan=$(ldd "$libdir/libhixl-ucx.so.0" 2>/dev/null |
           sed -n 's/^[[:space:]]*libasan[^ ]* => \([^ ]*\) .*/\1/p' | head -n 1)
    if out=$(cd / && LD_PRELOAD=${asan:-${LD_PRELOAD:-}} \
             ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
             PYTHONPATH=$root$HIXL_PYTHONDIR \
             HIXL_UCX_LIB=$libdir/libhixl-ucx.so.0 "$PYTHON" -c \
             'import hixl_ucx, hixl; print(hixl_ucx.version(), hixl_ucx.__file__, hixl.__file__, len(hixl.__all__))' 2>&1); then
        echo "PASS: Python modules (hixl_ucx, and hixl: CANN's name) installed: $out"
    else
        echo "FAIL: installed Python module: $out"
        rc=1
    fi
    # where this Python looks under the prefix, make install must put it
    if ! "$PYTHON" -c 'import os, sys
p, d = os.path.normpath(sys.argv[1]), os.path.normpath(sys.argv[2])
searched = [x for x in sys.path if x.startswith(p + os.sep)]
sys.exit(1 if searched and d not in sys.path else 0)' "$HIXL_PREFIX" "$HIXL_PYTHONDIR"
    then
        echo "FAIL: $PYTHON searches $HIXL_PREFIX but not $HIXL_PYTHONDIR"
        rc=1
    fi
fi

# ---- CMake -------------------------------------------------------------------
cmake_skipped=0
if command -v cmake >/dev/null 2>&1; then
    if cmake -S . -B cmake-build -DCMAKE_PREFIX_PATH="$prefix" \
             -DCMAKE_C_COMPILER="${CC%% *}" -DCMAKE_C_FLAGS="$san" \
             >"$tmp/cmake.log" 2>&1 &&
       cmake --build cmake-build >>"$tmp/cmake.log" 2>&1; then
        run_consumer "CMake find_package(hixl-ucx)" cmake-build/consumer
        if [ -x cmake-build/consumer_static ]; then
            run_consumer "CMake hixl-ucx::hixl-ucx-static" \
                cmake-build/consumer_static static
        else
            echo "FAIL: CMake: no hixl-ucx::hixl-ucx-static target"
            rc=1
        fi
    else
        cat "$tmp/cmake.log"
        echo "FAIL: CMake project with find_package(hixl-ucx)"
        rc=1
    fi
else
    cmake_skipped=1
fi

if [ $rc != 0 ]; then
    exit $rc
fi
if [ $cmake_skipped = 1 ]; then
    echo "SKIP: no cmake (Debian: cmake): find_package(hixl-ucx) not tested"
    exit 77
fi
exit 0
