#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: the layers of src/ include only layers below them.
#
#   util < wire < core/worker < core/am < core/peer < core/xfer < core
#        < ctrl < device < ops < compat
#
# (the rooms of core/ and what each holds: layer_order.sh).  One
# exception: every room includes core/engine.h, the engine object whose
# fields are the rooms' state; the calls between rooms are checked by
# check_circles.sh, which reads the objects.
#
# A file includes "layer/header.h" of its own layer or one below, or a
# header of its own folder by its bare name.  The compatibility surfaces
# (compat/, but for compat_support.c, the bridge the core implements for
# them) see only the public headers <hixl/...>, <cs/...> and
# compat/compat.h, and headers of compat/ that obey the same rule: they are
# layers over the public API, not over the inside.  Prints every violation.
srcdir=${srcdir:-$(dirname "$0")}
src="$srcdir/../src"
. "$srcdir/layer_order.sh"

bad=0
for dir in $order; do
    self=$(rank "$dir")
    for f in "$src/$dir"/*.c "$src/$dir"/*.h; do
        [ -f "$f" ] || continue
        name=$(basename "$f")
        # the quoted includes of the file, one per line
        for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
            [ "$inc" = "config.h" ] && continue
            if [ "$dir" = compat ] && [ "$name" != compat_support.c ]; then
                # compat.h, or a header of a surface's own in compat/
                # (itself checked here, so the rule holds through it)
                case "$inc" in
                */*|compat_support.*) ok=0 ;;
                *) if [ -f "$src/compat/$inc" ]; then ok=1; else ok=0; fi ;;
                esac
                if [ $ok = 0 ]; then
                    echo "src/$dir/$name includes \"$inc\": the compatibility surfaces see only <hixl/...>, <cs/...>, compat.h and their own headers"
                    bad=1
                fi
                continue
            fi
            case "$inc" in
            core/engine.h)
                # the engine object: any room of core and anything above
                case "$dir" in
                util|wire) echo "src/$dir/$name includes \"$inc\": core is above $dir"; bad=1 ;;
                esac
                ;;
            */*)
                layer=$(layer_of "$inc")
                r=$(rank "$layer")
                if [ "$r" -lt 0 ]; then
                    echo "src/$dir/$name includes \"$inc\": not a layer of src/"
                    bad=1
                elif [ "$r" -gt "$self" ]; then
                    echo "src/$dir/$name includes \"$inc\": $layer is above $dir"
                    bad=1
                fi
                ;;
            *)
                if [ ! -f "$src/$dir/$inc" ]; then
                    echo "src/$dir/$name includes \"$inc\": name the layer (\"layer/$inc\")"
                    bad=1
                fi
                ;;
            esac
        done
    done
done
# nothing may sit in src/ outside the layers, nor in a folder of core/
# that is not one of its rooms
for f in "$src"/*.c "$src"/*.h; do
    [ -f "$f" ] && { echo "src/$(basename "$f") is outside the layer folders"; bad=1; }
done
for d in "$src"/core/*/; do
    [ -d "$d" ] || continue
    [ "$(rank "core/$(basename "$d")")" -ge 0 ] ||
        { echo "src/core/$(basename "$d")/ is not a room of core known here"; bad=1; }
done
[ $bad = 0 ] && echo "PASS: src/ layers include only layers below them"
exit $bad
