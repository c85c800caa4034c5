#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/pd_pipeline's two roles on two "hosts": network namespaces joined by
# a veth pair, UCX_TLS=tcp with each side's UCX_NET_DEVICES set to its veth,
# as on two machines.  Decode listens in one namespace; prefill, in the
# other, learns the KV layout from decode's engine and moves the cache in
# every mode (pipelined, bulk, staged over the veth's TCP); decode verifies
# every byte.  Passes when both exit 0 and decode reports 0 bytes wrong.
# It measures nothing (tests never assert on speed), but prints decode's
# report into the log.
#
# To measure with it (README "Two machines"): PD_NETNS_SHAPE replaces the
# small test cache (e.g. "--preset small"), PD_NETNS_ENV adds environment
# to both roles (e.g. "UCX_TCP_TX_SEG_SIZE=64k UCX_TCP_RX_SEG_SIZE=64k").
#
# Needs root and `ip netns`: otherwise SKIP (77) with the reason.  Every
# name carries this process's pid; addresses live only on the veth inside
# the namespaces; everything is deleted on exit, also on failure.
set -u
srcdir=${srcdir:-$(dirname "$0")/..}
builddir=$(pwd)
pd=$builddir/../bench/pd_pipeline
[ -x "$pd" ] || { echo "SKIP: no $pd (make builds bench/ first)"; exit 77; }
port=16000
ns_tag=hxpd
ns_net=10.77.0
. "$srcdir/mh/netns_pair.sh"

# A small cache (8 layers of 1 MiB in 32 KiB blocks): the point is the
# exchange and the verification across hosts, not the speed.
shape=${PD_NETNS_SHAPE:-"--layers 8 --kv-heads 8 --head-dim 128 --seq-len 256"}
extra=${PD_NETNS_ENV:-}
unset HIXL_LOG_LEVEL
ip netns exec "$nsd" env UCX_TLS=tcp UCX_NET_DEVICES="$vd" $extra \
    timeout 180 "$pd" decode --listen "$ip_d:$port" $shape \
    --timeout-ms 30000 --peer-wait-s 60 >"$tmp/decode.out" 2>&1 &
dec_pid=$!

ip netns exec "$nsp" env UCX_TLS=tcp UCX_NET_DEVICES="$vp" $extra \
    timeout 180 "$pd" prefill --decode "$ip_d:$port" --quiet \
    --timeout-ms 30000 --peer-wait-s 60 >"$tmp/prefill.out" 2>&1
pre_rc=$?
wait "$dec_pid"
dec_rc=$?
dec_pid=

echo "=== prefill (namespace $nsp, $ip_p) exit $pre_rc"
cat "$tmp/prefill.out"
echo "=== decode (namespace $nsd, $ip_d) exit $dec_rc"
cat "$tmp/decode.out"

rc=0
[ "$pre_rc" = 0 ] || { echo "FAIL: prefill exited $pre_rc"; rc=1; }
[ "$dec_rc" = 0 ] || { echo "FAIL: decode exited $dec_rc"; rc=1; }
grep -q "^verified at decode: 4 run(s), every byte; 0 wrong$" "$tmp/decode.out" ||
    { echo "FAIL: decode did not verify 4 runs with 0 bytes wrong"; rc=1; }
layers=$(sed -n "s/^pd_pipeline decode: KV cache \([0-9]*\) layers.*/\1/p" "$tmp/decode.out")
grep -q "prefill engine $ip_p connected" "$tmp/decode.out" ||
    { echo "FAIL: decode did not see prefill $ip_p"; rc=1; }
# prefill printed the layout it learned from decode's engine
grep -q "^pd_pipeline prefill: decode's KV cache ${layers:-?} layers" "$tmp/prefill.out" ||
    { echo "FAIL: prefill did not learn decode's layout"; rc=1; }
for mode in pipelined bulk staged; do
    grep -q "^$mode .* decode found 0 bytes wrong$" "$tmp/prefill.out" ||
        { echo "FAIL: no verified $mode run"; rc=1; }
done
[ $rc = 0 ] && echo "PASS: two namespaces over tcp, every byte verified"
exit $rc
