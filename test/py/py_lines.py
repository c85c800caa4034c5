# SPDX-License-Identifier: BSD-3-Clause
"""The line protocol of the Python tests' processes: one JSON object per
line, from a role to its orchestrator on stdout and back on stdin."""

import json
import sys


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def hear():
    line = sys.stdin.readline()
    if not line:
        raise SystemExit("the orchestrator went away")
    return json.loads(line)
