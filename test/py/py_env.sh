# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the Python tests (it_python, it_py_compat, it_py_wait.sh,
# it_py_memory.sh): the interpreter, the library under test and the
# package's directory, so that each test script says only what it runs.
#
# Environment (set by test/Makefile.am; defaults for a manual run from the
# build's test/ directory):
#   PYTHON               the interpreter configure found (python3)
#   HIXL_UCX_LIB         the libhixl-ucx.so.0 under test
#   HIXL_UCX_PYTHONPATH  the directory holding hixl_ucx/
# Exits 77 (skipped) without a Python interpreter.
srcdir=${srcdir:-$(dirname "$0")/..}
PYTHON=${PYTHON:-python3}
if ! command -v "$PYTHON" >/dev/null 2>&1; then
    echo "SKIP: no Python interpreter ($PYTHON)"
    exit 77
fi
if [ -z "${HIXL_UCX_LIB:-}" ]; then
    for lib in ../src/.libs/libhixl-ucx.so.0 "$srcdir/../src/.libs/libhixl-ucx.so.0"; do
        if [ -f "$lib" ]; then
            HIXL_UCX_LIB=$(cd "$(dirname "$lib")" && pwd)/libhixl-ucx.so.0
            break
        fi
    done
fi
export HIXL_UCX_LIB
# A sanitized build (.ci/run): the ASan runtime must be loaded before
# Python; CPython's own allocations would read as leaks, so leaks are not
# checked here (the C tests check the library for them).
asan=$(ldd "$HIXL_UCX_LIB" 2>/dev/null |
       sed -n 's/^[[:space:]]*libasan[^ ]* => \([^ ]*\) .*/\1/p' | head -n 1)
if [ -n "$asan" ]; then
    LD_PRELOAD="$asan${LD_PRELOAD:+ $LD_PRELOAD}"
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    export LD_PRELOAD ASAN_OPTIONS
fi
PYTHONPATH=${HIXL_UCX_PYTHONPATH:-$srcdir/../python}${PYTHONPATH:+:$PYTHONPATH}
export PYTHONPATH
