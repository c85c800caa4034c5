#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: alloc_mem views and memory descriptions in Python
# (py_memory.py).
# Interpreter, library and package: py_env.sh (exit 77 without Python).
. "${srcdir:-$(dirname "$0")/..}/py/py_env.sh"
exec "$PYTHON" "$srcdir/py/py_memory.py"
