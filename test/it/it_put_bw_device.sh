#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/put_bw with device memory (-m ascend[,ascend]) over the EMULATED ACL
# runtime (test/emu_acl, a test double): a smoke test that the benchmark's
# device buffers register, move (IPC and staging paths) and verify.  It
# measures nothing; the numbers of an emulator mean nothing.
set -u
# automake runs tests from the build directory (which differs from the
# script's own in a VPATH build such as make distcheck)
builddir=$(pwd)
put_bw=$builddir/../bench/put_bw
[ -x "$put_bw" ] || { echo "no $put_bw: skipped"; exit 77; }
command -v timeout >/dev/null || { echo "no timeout(1): skipped"; exit 77; }

export HIXL_PLUGIN_DIR="$builddir/../plugins/ascend/.libs"
export HIXL_PLUGIN_RUNTIME="ascend=$builddir/emu_acl/.libs/libascendcl.so"
unset UCX_TLS

port=$((20000 + $$ % 20000))
rc=0
. "$(dirname "$0")/put_bw_pair.sh"
for m in ascend,ascend ascend,host host,ascend; do
    for t in put_bw get_bw; do
        put_bw_pair -t $t -m $m -s 256k -n 50 -w 5
    done
done
exit $rc
