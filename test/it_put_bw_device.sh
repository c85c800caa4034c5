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

export HIXL_PLUGIN_DIR="$builddir/../plugins/ascend/.libs"
export HIXL_PLUGIN_RUNTIME="ascend=$builddir/emu_acl/.libs/libascendcl.so"
unset UCX_TLS

port=$((20000 + $$ % 20000))
rc=0
for m in ascend,ascend ascend,host host,ascend; do
    for t in put_bw get_bw; do
        "$put_bw" -p $port -q --timeout 60 >/dev/null 2>&1 &
        srv=$!
        sleep 0.5
        out=$("$put_bw" 127.0.0.1 -p $port -t $t -m $m -s 256k -n 50 -w 5 \
              --timeout 60 2>&1)
        crc=$?
        wait $srv
        src=$?
        if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
            echo "put_bw -t $t -m $m: client exit $crc, server exit $src"
            echo "$out" | tail -5
            rc=1
        else
            echo "put_bw -t $t -m $m: ok"
        fi
        port=$((port + 1))
    done
done
exit $rc
