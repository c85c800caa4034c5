#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: a paged KV cache moved by block table between two Python
# processes (py_blocks.py), over tcp and shared memory.
# Interpreter, library and package: py_env.sh (exit 77 without Python).
. "${srcdir:-$(dirname "$0")/..}/py/py_env.sh"
exec "$PYTHON" "$srcdir/py/py_blocks.py" run
