#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/pd_torch.py's two roles on two "hosts": network namespaces joined
# by a veth pair, UCX_TLS=tcp with each side's UCX_NET_DEVICES its veth
# (as it_pd_netns.sh does for pd_pipeline).  Decode listens in one
# namespace, prefill in the other learns the model, layout and memory
# description from decode's notifies; every mode must reproduce the
# single-process reference.
#
# Needs root, `ip netns` and PyTorch: otherwise SKIP (77) with the
# reason.  Names carry this process's pid; everything is deleted on exit,
# also on failure; both roles run under timeout.  It measures nothing
# (tests never assert on speed) but prints both roles' reports.
set -u
# Interpreter, library and package: py_env.sh (exit 77 without Python).
. "${srcdir:-$(dirname "$0")/..}/py/py_env.sh"
pd="$srcdir/../bench/pd_torch.py"
"$PYTHON" -c "import torch" >/dev/null 2>&1 ||
    { echo "SKIP: $PYTHON cannot import torch (Debian: apt-get install python3-torch)"; exit 77; }
port=16100
ns_tag=hxt
ns_net=10.78.0
. "$srcdir/mh/netns_pair.sh"

# small and quick; PD_TORCH_SHAPE replaces it to measure (e.g. "--layers
# 12", pd_torch's default model)
shape=${PD_TORCH_SHAPE:-"--layers 8 --dim 64 --ffn 128 --prompt-len 40 --new-tokens 4"}
unset HIXL_LOG_LEVEL
ip netns exec "$nsd" env UCX_TLS=tcp UCX_NET_DEVICES="$vd" \
    timeout 240 "$PYTHON" "$pd" decode --listen "$ip_d:$port" $shape \
    --timeout-ms 30000 --peer-wait-s 90 >"$tmp/decode.out" 2>&1 &
dec_pid=$!
ip netns exec "$nsp" env UCX_TLS=tcp UCX_NET_DEVICES="$vp" \
    timeout 240 "$PYTHON" "$pd" prefill --decode "$ip_d:$port" \
    --timeout-ms 30000 --peer-wait-s 90 >"$tmp/prefill.out" 2>&1
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
for mode in pipelined bulk staged; do
    grep -q "^$mode .*: ok$" "$tmp/decode.out" ||
        { echo "FAIL: $mode did not match the reference"; rc=1; }
done
grep -q "^pd_torch prefill: decode $ip_d:$port:" "$tmp/prefill.out" ||
    { echo "FAIL: prefill did not import decode's description"; rc=1; }
[ $rc = 0 ] && echo "PASS: two namespaces over tcp, every mode equal to the reference"
exit $rc
