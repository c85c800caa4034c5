# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the structure checks (check_layers.sh, check_circles.sh): the
# layers of src/, bottom up, and how to tell a path's layer.
#
#   util < wire < core < ctrl < device < ops < compat
#
# core/ is itself in rooms, each a layer of its own, bottom up:
#
#   core/worker < core/am < core/peer < core/xfer < core (engine.c/.h)
#
# worker: the UCX context, worker and progress; am: the active-message
# transport; peer: peers, endpoints and their end; xfer: requests, local
# regions and the library's WRITE/READ protocol; at the top, the engine
# that owns them all.
order="util wire core/worker core/am core/peer core/xfer core ctrl device ops compat"

# rank LAYER: its place in $order, -1 when it is not a layer
rank() {
    r=0
    for l in $order; do
        [ "$l" = "$1" ] && { echo $r; return; }
        r=$((r + 1))
    done
    echo -1
}

# layer_of PATH: the layer a path under src/ belongs to ("core/peer/peer.h"
# is core/peer, "core/engine.h" core, "ops/transfer.c" ops)
layer_of() {
    case "$1" in
    core/*/*) r=${1#core/}; echo "core/${r%%/*}" ;;
    *) echo "${1%%/*}" ;;
    esac
}
