#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: the static and the shared library define no global symbol
# outside the library's names, so that linking libhixl-ucx.a into a program
# cannot collide with the program's own functions.
#
# Allowed: hixl_* and HIXL_* (the C API and the inside's module prefixes),
# every function the public headers declare HIXL_API (the hixl verbs,
# CANN's HixlCS* interface, ...), and C++ names inside a namespace the
# public headers open (hixl:: mangles to _Z...N4hixl...).  The set comes
# from include/, so a new public function needs no edit here.
#
# Skipped (77) without nm or without the static library (--disable-static).
srcdir=${srcdir:-$(dirname "$0")}
include="$srcdir/../include"
. "$srcdir/static_lib.sh"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# Names declared HIXL_API: the headers as one line cut at each ";", and
# in each declaration that says HIXL_API (what precedes it dropped, a
# comment among it) the identifier before its "(".
find "$include" -name '*.h' -o -name '*.hpp' | while read -r h; do
    tr '\n' ' ' <"$h" | tr ';' '\n' | grep 'HIXL_API' | sed 's/.*HIXL_API/ /' |
        sed -n 's/^[^(]*[^A-Za-z0-9_(]\([A-Za-z_][A-Za-z0-9_]*\)[[:space:]]*(.*/\1/p'
done | sort -u >"$tmp/api"
if [ ! -s "$tmp/api" ]; then
    echo "FAIL: no HIXL_API declaration found in $include"
    exit 1
fi

# C++ namespaces of the public headers, as the Itanium ABI mangles them
# (N<length><name>, after _Z and any qualifiers or special-name letters).
ns=$(find "$include" -name '*.h' -o -name '*.hpp' | xargs sed -n \
     's/^[[:space:]]*namespace[[:space:]]\{1,\}\([A-Za-z_][A-Za-z0-9_]*\).*/\1/p' |
     sort -u)

allowed() {
    case "$1" in
    hixl_*|HIXL_*) return 0 ;;
    # what the linker defines in every shared object on some toolchains
    _init|_fini|_edata|_end|__bss_start) return 0 ;;
    # what AddressSanitizer adds beside every global it instruments
    # (one-definition-rule indicators) in a sanitized build
    __odr_asan.*|__odr_asan_gen_*) return 0 ;;
    esac
    for n in $ns; do
        case "$1" in
        _Z*N${#n}$n*) return 0 ;;
        esac
    done
    grep -qxF "$1" "$tmp/api"
}

# "nm -B" style lines of defined symbols: value, type, name.
check() {
    what=$1
    shift
    "$@" >"$tmp/nm" 2>"$tmp/nm.err" || {
        echo "FAIL: $*: $(cat "$tmp/nm.err")"
        bad=1
        return
    }
    awk 'NF == 3 { print $3 }' "$tmp/nm" | sort -u >"$tmp/names"
    count=$(wc -l <"$tmp/names")
    found=0
    while read -r sym; do
        if ! allowed "$sym"; then
            echo "FAIL: $what defines $sym, outside the library's names"
            found=1
        fi
    done <"$tmp/names"
    if [ $found = 0 ]; then
        echo "PASS: $what: $count global symbols, all the library's"
    else
        bad=1
    fi
}

bad=0
check "libhixl-ucx.a" $nm_cmd -g --defined-only "$libs/libhixl-ucx.a"
if [ -f "$libs/libhixl-ucx.so" ]; then
    check "libhixl-ucx.so" $nm_cmd -D --defined-only "$libs/libhixl-ucx.so"
else
    echo "no shared library in $libs (built with --disable-shared?)"
fi
exit $bad
