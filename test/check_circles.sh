#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: no call goes up a layer (or a room of core/), and no call
# circle in the library is wider than two files.  The layer check's
# companion: check_layers.sh keeps includes from going up a layer; this
# reads what the files really call, so that neither a declaration written
# by hand nor the engine object every room of core includes hides a call
# up, and the files of a layer do not call each other round in a ring that
# has to be read whole.
#
# A file calls another when its object uses a global symbol the other
# defines (nm on the static library's members: what the compiler kept,
# not what a text search guesses).  Files that reach each other through
# such calls form a circle; two files that call each other are allowed
# (an object and its helper), three or more fail with the calls that tie
# them.
#
# Skipped (77) without nm or without the static library (--disable-static).
srcdir=${srcdir:-$(dirname "$0")}
max=${HIXL_CIRCLE_MAX:-2}
. "$srcdir/static_lib.sh"
. "$srcdir/layer_order.sh"

# "L member rank layer" for every source file of the library
layers() {
    (cd "$srcdir/../src" && find . -name '*.c') | sed 's#^\./##' |
        while read -r f; do
            l=$(layer_of "$f")
            echo "L $(basename "$f" .c) $(rank "$l") $l"
        done
}

# "member type symbol" for every global definition and undefined use;
# members are named after their source file (libtool's lib<name>_la-
# prefix dropped)
{
    layers
    $nm_cmd -A "$libs/libhixl-ucx.a" 2>/dev/null |
        sed -n 's/^[^:]*:\([^:]*\)\.o:[0-9a-f ]* \([A-Z]\) \(.*\)$/\1 \2 \3/p' |
        sed 's/^lib[a-z_]*_la-//'
} | awk -v max="$max" '
    $1 == "L" { rk[$2] = $3; layer[$2] = $4; next }
    $2 == "U" { use[++nu] = $1 " " $3; next }
    $2 ~ /^[TDBRVWGS]$/ { def[$3] = $1; file[$1] = 1 }
    END {
        # edges: a file calls another that defines what it uses
        for (i = 1; i <= nu; ++i) {
            split(use[i], u, " ")
            if ((u[2] in def) && (def[u[2]] != u[1])) {
                e = u[1] SUBSEP def[u[2]]
                if (!(e in edge)) {
                    edge[e] = u[2]
                } else if (index(" " edge[e] " ", " " u[2] " ") == 0) {
                    edge[e] = edge[e] " " u[2]
                }
                reach[u[1], def[u[2]]] = 1
            }
        }
        bad = 0
        # no call up: a file calls only files of its layer or below
        for (e in edge) {
            split(e, p, SUBSEP)
            if ((p[1] in rk) && (p[2] in rk) && (rk[p[2]] > rk[p[1]])) {
                bad = 1; ++ups
                printf "FAIL: a call up, %s (%s) -> %s (%s): %s\n", p[1],
                       layer[p[1]], p[2], layer[p[2]], edge[e]
            }
        }
        n = 0
        for (f in file) { names[++n] = f }
        # reachability (Warshall): the library has a few dozen files
        for (k = 1; k <= n; ++k)
            for (i = 1; i <= n; ++i)
                if ((names[i], names[k]) in reach)
                    for (j = 1; j <= n; ++j)
                        if ((names[k], names[j]) in reach)
                            reach[names[i], names[j]] = 1
        for (i = 1; i <= n; ++i) {
            if (names[i] in seen) continue
            ring = names[i]; size = 1; seen[names[i]] = 1
            for (j = 1; j <= n; ++j)
                if ((j != i) && ((names[i], names[j]) in reach) &&
                    ((names[j], names[i]) in reach)) {
                    ring = ring " " names[j]; ++size; seen[names[j]] = 1
                }
            if (size <= max) continue
            bad = 1
            printf "FAIL: a call circle of %d files: %s\n", size, ring
            split(ring, r, " ")
            for (a = 1; a <= size; ++a)
                for (b = 1; b <= size; ++b)
                    if ((r[a], r[b]) in edge)
                        printf "  %s -> %s: %s\n", r[a], r[b], edge[r[a], r[b]]
        }
        if (!bad) printf "no call up a layer, no call circle wider than %d files among %d\n", max, n
        exit bad
    }'
