#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: the hixl_ucx Python module between two Python processes
# (py_pair.py), for UCX_TLS=tcp, sm and UCX's default.
# Interpreter, library and package: py_env.sh (exit 77 without Python).
. "${srcdir:-$(dirname "$0")/..}/py/py_env.sh"
exec "$PYTHON" "$srcdir/py/py_pair.py" run
