#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: `import hixl` (CANN hixl's module name) between two processes
# (py_compat.py), for UCX_TLS=tcp and sm.
# Interpreter, library and package: py_env.sh (exit 77 without Python).
. "${srcdir:-$(dirname "$0")/..}/py/py_env.sh"
exec "$PYTHON" "$srcdir/py/py_compat.py" run
