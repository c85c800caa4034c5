#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: Debian's prometheus server scrapes a decode and a prefill
# and reports exactly what they did (py_prometheus.py); skipped without
# the server or the metrics endpoint.
# Interpreter, library and package: py_env.sh (exit 77 without Python).
. "${srcdir:-$(dirname "$0")/..}/py/py_env.sh"
exec "$PYTHON" "$srcdir/py/py_prometheus.py"
