#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: the hixl_ucx waits, asyncio awaitables and event fd across
# Python processes (py_wait.py), over tcp and sm.
# Interpreter, library and package: py_env.sh (exit 77 without Python).
. "${srcdir:-$(dirname "$0")/..}/py/py_env.sh"
exec "$PYTHON" "$srcdir/py/py_wait.py" run
