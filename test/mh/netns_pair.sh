# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the two-"host" tests (it_pd_netns.sh, it_pd_torch_netns.sh):
# two network namespaces joined by a veth pair, one address each, torn down
# on exit, also on failure.
#
# Before sourcing, set:
#   ns_tag   up to 4 characters naming this test's namespaces and links
#   ns_net   the /24 to use ("10.77.0"): .1 is prefill's, .2 decode's
# Afterwards: nsp/nsd (prefill's and decode's namespace), vp/vd (the veth
# end in each), ip_p/ip_d, tmp (a directory removed on exit) and dec_pid
# (set it to a background decode: it is killed on exit).  Exits 77 with
# the reason where namespaces cannot be made (not root, no iproute2).
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for network namespaces"; exit 77; }
command -v ip >/dev/null 2>&1 || { echo "SKIP: no ip (iproute2)"; exit 77; }
command -v timeout >/dev/null 2>&1 || { echo "SKIP: no timeout (coreutils)"; exit 77; }

nsp=${ns_tag}P$$        # names carry the pid: runs never collide
nsd=${ns_tag}D$$
vp=${ns_tag}p$$         # veth ends (<= 15 characters with a 7-digit pid)
vd=${ns_tag}d$$
ip_p=$ns_net.1
ip_d=$ns_net.2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/netns_pair.XXXXXX") || exit 99
dec_pid=

netns_pair_cleanup() {
    if [ -n "$dec_pid" ]; then
        kill "$dec_pid" 2>/dev/null
        wait "$dec_pid" 2>/dev/null
    fi
    # deleting a namespace deletes the veth end in it, and so the pair
    ip netns del "$nsp" 2>/dev/null
    ip netns del "$nsd" 2>/dev/null
    ip link del "$vp" 2>/dev/null
    rm -rf "$tmp"
}
trap netns_pair_cleanup EXIT
trap 'exit 1' INT TERM HUP

if ! ip netns add "$nsp" 2>"$tmp/err"; then
    echo "SKIP: ip netns add failed: $(cat "$tmp/err")"
    exit 77
fi
ip netns add "$nsd" &&
ip link add "$vp" type veth peer name "$vd" &&
ip link set "$vp" netns "$nsp" &&
ip link set "$vd" netns "$nsd" &&
ip -n "$nsp" addr add "$ip_p/24" dev "$vp" &&
ip -n "$nsd" addr add "$ip_d/24" dev "$vd" &&
ip -n "$nsp" link set lo up && ip -n "$nsd" link set lo up &&
ip -n "$nsp" link set "$vp" up && ip -n "$nsd" link set "$vd" up || {
    echo "FAIL: could not set up the namespaces and the veth pair"
    exit 1
}
