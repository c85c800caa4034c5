#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: hixl_ucx's ctypes structures, constants and bindings against
# include/hixl/hixl.h (py_layout.py compiles a C program with $CC that
# prints sizeof/offsetof of every field the package declares).
# Environment from test/Makefile.am: PYTHON, CC, HIXL_INCLUDE_DIR,
# HIXL_UCX_PYTHONPATH, HIXL_PACKAGE_VERSION.  Exit 77 without Python.
srcdir=${srcdir:-$(dirname "$0")/..}
PYTHON=${PYTHON:-python3}
if ! command -v "$PYTHON" >/dev/null 2>&1; then
    echo "SKIP: no Python interpreter ($PYTHON)"
    exit 77
fi
HIXL_INCLUDE_DIR=${HIXL_INCLUDE_DIR:-$srcdir/../include}
export HIXL_INCLUDE_DIR
PYTHONPATH=${HIXL_UCX_PYTHONPATH:-$srcdir/../python}${PYTHONPATH:+:$PYTHONPATH}
export PYTHONPATH
exec "$PYTHON" "$srcdir/py/py_layout.py"
