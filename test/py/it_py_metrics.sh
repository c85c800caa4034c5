#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: the metrics in Python (py_metrics.py): Hixl.stats(),
# metrics_text(), the HTTP endpoint and a prometheus_client collector.
# Interpreter, library and package: py_env.sh (exit 77 without Python).
. "${srcdir:-$(dirname "$0")/..}/py/py_env.sh"
exec "$PYTHON" "$srcdir/py/py_metrics.py"
