#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: the Python package as a user installs it, offline.  In a
# fresh venv made by $PYTHON -m venv --system-site-packages (Debian's numpy
# visible, no package index), `pip install --no-build-isolation --no-index`
# of a copy of python/, then from that venv:
#   - HIXL_UCX_LIB naming a missing file is an error, not a fallback;
#   - pkg-config finds the library (a hixl-ucx.pc pointing at the build);
#   - py_venv_pair.py: a numpy array and a bytearray registered as objects
#     move between two processes (tcp and sm), every byte checked; wrong
#     arguments refused by name; the exceptions mode.
# SKIP (77) with the reason when venv, numpy, setuptools >= 61 or wheel are
# missing (quickstart.sh installs python3-venv python3-numpy
# python3-setuptools python3-wheel).
srcdir=${srcdir:-$(dirname "$0")/..}
srcdir=$(cd "$srcdir" && pwd)
PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null 2>&1 ||
    { echo "SKIP: no Python interpreter ($PYTHON)"; exit 77; }
"$PYTHON" -c 'import venv, ensurepip' 2>/dev/null ||
    { echo "SKIP: $PYTHON has no venv/ensurepip (Debian: python3-venv)"; exit 77; }
"$PYTHON" -c 'import numpy' 2>/dev/null ||
    { echo "SKIP: $PYTHON has no numpy (Debian: python3-numpy)"; exit 77; }
"$PYTHON" -c 'import setuptools, wheel, sys
sys.exit(int(setuptools.__version__.split(".")[0]) < 61)' 2>/dev/null ||
    { echo "SKIP: $PYTHON lacks setuptools >= 61 or wheel (Debian: python3-setuptools python3-wheel)"; exit 77; }
if [ -z "${HIXL_UCX_LIB:-}" ] || [ ! -f "$HIXL_UCX_LIB" ]; then
    echo "FAIL: HIXL_UCX_LIB (the library under test) is not set"
    exit 1
fi
lib=$HIXL_UCX_LIB

tmp=$(mktemp -d "${TMPDIR:-/tmp}/it_py_venv.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP

# pip builds in the source tree (build/, *.egg-info): use a copy
cp -R "$srcdir/../python" "$tmp/src" && chmod -R u+w "$tmp/src" &&
    rm -rf "$tmp/src/build" "$tmp/src"/*.egg-info "$tmp/src/hixl_ucx/_libdir.py"
"$PYTHON" -m venv --system-site-packages "$tmp/venv" ||
    { echo "FAIL: $PYTHON -m venv"; exit 1; }
py=$tmp/venv/bin/python
if ! "$py" -m pip install --no-build-isolation --no-index --no-cache-dir \
        "$tmp/src" >"$tmp/pip.log" 2>&1; then
    cat "$tmp/pip.log"
    echo "FAIL: pip install --no-build-isolation --no-index (offline) failed"
    exit 1
fi
tail -n 1 "$tmp/pip.log"

# a sanitized build (.ci/run) needs the ASan runtime loaded before Python
asan=$(ldd "$lib" 2>/dev/null |
       sed -n 's/^[[:space:]]*libasan[^ ]* => \([^ ]*\) .*/\1/p' | head -n 1)
if [ -n "$asan" ]; then
    LD_PRELOAD="$asan${LD_PRELOAD:+ $LD_PRELOAD}"
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    export LD_PRELOAD ASAN_OPTIONS
fi

# from now on only the installed copy: no source tree on the path
unset PYTHONPATH HIXL_UCX_PYTHONPATH
cd "$tmp" || exit 99
rc=0
where=$("$py" -c 'import hixl_ucx; print(hixl_ucx.__file__)')
case $where in
    "$tmp/venv/"*) echo "PASS: import hixl_ucx from the venv ($where)" ;;
    *) echo "FAIL: hixl_ucx came from $where, not the venv"; rc=1 ;;
esac
# and CANN hixl's module name, from the same wheel
where=$("$py" -c 'import hixl; print(hixl.__file__, len(hixl.__all__))')
case $where in
    "$tmp/venv/"*" 44") echo "PASS: import hixl from the venv ($where)" ;;
    *) echo "FAIL: hixl came from $where, not the venv"; rc=1 ;;
esac

# a path that is given must be the one used
out=$(HIXL_UCX_LIB=$tmp/no-such-libhixl-ucx.so.0 "$py" -c \
      'import hixl_ucx; hixl_ucx.version()' 2>&1)
case $out in
    *LibraryNotFoundError*no-such-libhixl-ucx.so.0*"does not exist"*)
        echo "PASS: HIXL_UCX_LIB naming a missing file is an error" ;;
    *) echo "FAIL: HIXL_UCX_LIB=missing gave: $out"; rc=1 ;;
esac

# pkg-config: a hixl-ucx.pc whose libdir is the build's library directory
mkdir "$tmp/pc" "$tmp/nopc"
printf 'libdir=%s\nName: hixl-ucx\nDescription: test\nVersion: 0\nLibs: -L${libdir} -lhixl-ucx\n' \
    "$(dirname "$lib")" >"$tmp/pc/hixl-ucx.pc"
if command -v pkg-config >/dev/null 2>&1; then
    got=$(env -u HIXL_UCX_LIB PKG_CONFIG_LIBDIR="$tmp/pc" PKG_CONFIG_PATH= \
          "$py" -c 'import hixl_ucx; print(hixl_ucx.library)' 2>&1)
    if [ "$got" = "$(dirname "$lib")/libhixl-ucx.so.0" ]; then
        echo "PASS: found through pkg-config: $got"
    else
        echo "FAIL: through pkg-config expected $(dirname "$lib")/libhixl-ucx.so.0, got: $got"
        rc=1
    fi
    # nothing to find (unless a copy is installed system-wide): a clear error
    got=$(env -u HIXL_UCX_LIB -u LD_LIBRARY_PATH PKG_CONFIG_LIBDIR="$tmp/nopc" \
          PKG_CONFIG_PATH= "$py" -c 'import hixl_ucx; print(hixl_ucx.library)' 2>&1)
    case $got in
        *LibraryNotFoundError*"Tried:"*) echo "PASS: nowhere to be found: a clear error" ;;
        /*) echo "note: a system copy was found without help: $got" ;;
        *) echo "FAIL: with no library anywhere: $got"; rc=1 ;;
    esac
else
    echo "note: no pkg-config: its search is not tested"
fi

cp "$srcdir/py/py_venv_pair.py" "$srcdir/py/py_lines.py" "$tmp/"
out=$("$py" "$tmp/py_venv_pair.py" api 2>&1)
case $out in
    *'"ok": true'*) echo "PASS: buffers, data_ptr objects, argument checks, exceptions mode" ;;
    *) echo "FAIL: api checks: $out"; rc=1 ;;
esac
"$py" "$tmp/py_venv_pair.py" run || rc=1
exit $rc
