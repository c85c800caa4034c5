#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Run a suite on the rma path: transfers as UCX puts and gets, completion by
# endpoint flush (HIXL_DATA_PATH=rma), over UCX_TLS=posix,cma, the one-sided
# zero-copy lanes this host has in place of RDMA's.  hixl.DataPath=auto
# takes this path only where UCX has RDMA lanes, so without this no suite
# would run it here.  Not over tcp: there UCX emulates puts with messages
# whose handler aborts the target when the initiator dies mid-put, which is
# why auto never takes rma over tcp (README.md, Known limitations) and why
# a deployment forcing it with tcp peers risks the target process.
#
#   rma_path.sh PROGRAM [ARG...]
#
# HX_PIN_ENV keeps these variables as set here through the harness, which
# otherwise clears HIXL_* and sets UCX_TLS per test (harness.h).  The
# library logs the path of every peer region it learns (debug level); the
# run fails unless some region took rma and none took another path, so a
# suite that silently fell back proves nothing and says so.
prog=$1
shift
if [ -z "$prog" ] || [ ! -x "$prog" ]; then
    echo "usage: rma_path.sh PROGRAM [ARG...]" >&2
    exit 99
fi

HIXL_DATA_PATH=rma
UCX_TLS=posix,cma
HIXL_LOG_LEVEL=debug
HX_PIN_ENV="HIXL_DATA_PATH UCX_TLS HIXL_LOG_LEVEL"
export HIXL_DATA_PATH UCX_TLS HIXL_LOG_LEVEL HX_PIN_ENV

out=$(mktemp) || exit 99
trap 'rm -f "$out"' EXIT
"$prog" "$@" >"$out" 2>&1
rc=$?
# the suite's own report; the library's debug lines only when it failed
if [ "$rc" = 0 ]; then
    grep -v '^\[[0-9.]*\] \[hixl [0-9]*\] DEBUG' "$out"
else
    cat "$out"
fi

rma=$(grep -c ' by path rma$' "$out")
other=$(grep -c ' by path \(am\|cma\|map\)$' "$out")
echo "rma path: $rma peer regions by UCX puts and gets, $other by another path (UCX_TLS=$UCX_TLS)"
if [ "$rc" = 0 ] && [ "$rma" = 0 ]; then
    echo "FAIL: no region took the rma path"
    rc=1
fi
if [ "$other" != 0 ]; then
    grep ' by path \(am\|cma\|map\)$' "$out" | head -5
    echo "FAIL: regions took another path than rma"
    rc=1
fi
exit $rc
