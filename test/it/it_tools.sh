#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tools/hixl_info as a person runs it: --help and -h (usage on stdout,
# status 0), a wrong option (usage on stderr, status 2), the option table
# with an option given on the command line and one from the environment
# (each says where its value comes from), -v's UCX version and
# workarounds (one turned off from the environment), and the plugin
# search, which in a build tree's tests never includes the installed
# directory.
set -u
builddir=$(pwd)
info=$builddir/../tools/hixl_info
[ -x "$info" ] || { echo "no $info: skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/it_tools.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
rc=0

fail() { echo "FAIL: $*"; rc=1; }

for h in --help -h; do
    "$info" $h >"$tmp/out" 2>"$tmp/err"; st=$?
    [ $st -eq 0 ] || fail "hixl_info $h: status $st"
    grep -q '^Usage: hixl_info' "$tmp/out" || fail "hixl_info $h: no usage on stdout"
    grep -q -- '--option KEY=VALUE' "$tmp/out" || fail "hixl_info $h: long options not listed"
    [ -s "$tmp/err" ] && fail "hixl_info $h: wrote to stderr: $(cat "$tmp/err")"
done

"$info" --no-such-option >"$tmp/out" 2>"$tmp/err"; st=$?
[ $st -eq 2 ] || fail "hixl_info --no-such-option: status $st, expected 2"
grep -q '^Usage: hixl_info' "$tmp/err" || fail "hixl_info --no-such-option: no usage on stderr"

"$info" --option hixl.PeerTimeoutMs=4321 --options >"$tmp/out" 2>&1; st=$?
[ $st -eq 0 ] || fail "hixl_info --option ... --options: status $st: $(cat "$tmp/out")"
grep 'hixl.PeerTimeoutMs' "$tmp/out" | grep -q 4321 ||
    fail "hixl_info --option hixl.PeerTimeoutMs=4321: value not shown: $(grep PeerTimeoutMs "$tmp/out")"

HIXL_DATA_PATH=am "$info" -o >"$tmp/out" 2>&1
grep 'hixl.DataPath' "$tmp/out" | grep -q 'HIXL_DATA_PATH' ||
    fail "HIXL_DATA_PATH=am: its source is not shown: $(grep DataPath "$tmp/out")"

"$info" --option hixl.PeerTimeoutMs=oops -o >"$tmp/out" 2>&1; st=$?
[ $st -ne 0 ] || fail "hixl_info with a bad option value: status 0"
grep -q 'hixl.PeerTimeoutMs' "$tmp/out" || fail "a bad option value: the message does not name the option: $(cat "$tmp/out")"
grep -q 'HIXL_PEER_TIMEOUT_MS' "$tmp/out" &&
    fail "a bad value given with --option is blamed on the environment variable: $(cat "$tmp/out")"

# -v: the UCX running, and each workaround in force or why not
UCX_ADAPTIVE_PROGRESS=y "$info" -v >"$tmp/out" 2>&1
grep -q '^# UCX [0-9]' "$tmp/out" || fail "hixl_info -v: no UCX version: $(cat "$tmp/out")"
grep -q 'tcp-put-emulation *in force' "$tmp/out" ||
    fail "hixl_info -v: tcp-put-emulation not in force: $(cat "$tmp/out")"
grep -q 'adaptive-progress *not in force: UCX_ADAPTIVE_PROGRESS is set' "$tmp/out" ||
    fail "hixl_info -v: UCX_ADAPTIVE_PROGRESS=y not reported: $(cat "$tmp/out")"

# the installed plugin directory is out of the search in make check
"$info" -p >"$tmp/out" 2>&1
if [ -n "${HIXL_PLUGIN_INSTALL_DIR-unset}" ]; then
    echo "note: HIXL_PLUGIN_INSTALL_DIR is set here; search not checked"
elif grep -q '/lib/hixl-ucx' "$tmp/out"; then
    fail "the plugin search includes an installed directory: $(cat "$tmp/out")"
fi
[ $rc -eq 0 ] && echo "hixl_info: help, errors, versions and workarounds, options and plugin search as expected"
exit $rc
