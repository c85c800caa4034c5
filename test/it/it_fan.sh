#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/fan in small runs, so that the benchmark cannot rot: fan-in and
# fan-out with N = 1, 2 (and the bare-UCX transfers and endpoints they run
# beside), then the cold test once, over shared memory and tcp, then
# fan-in into a large decode region over shared memory.  It
# asserts what fan itself checks: every run completed and the receiving
# side verified every byte (exit status 0; 3 means bad data).  It measures
# nothing.
set -u
# automake runs tests from the build directory (VPATH builds included)
builddir=$(pwd)
fan=$builddir/../bench/fan
[ -x "$fan" ] || { echo "no $fan: skipped (make, then make check)"; exit 77; }
command -v timeout >/dev/null || { echo "no timeout(1): skipped"; exit 77; }
unset UCX_TLS

rc=0
run() {
    echo "fan $*"
    out=$(timeout 300 "$fan" "$@" --out "" -q 2>&1)
    st=$?
    if [ $st -ne 0 ]; then
        echo "$out" | tail -20
        echo "FAILED: exit status $st"
        rc=1
    fi
}
run -t fan_in,fan_out -N 2 -T 4M -s 256K -r 1 --idle 0.1 \
    --tls sm --tls tcp
run -t cold -T 4M -s 1M -r 1 --tls sm --tls tcp
# a decode region large enough that same-host WRITEs bypass the caches
# (src/util/copy.h): 4 MiB descriptors, and 100000-byte ones whose
# destinations start off a cache line
run -t fan_in -N 2 -T 128M -s 4M -r 1 --idle 0 --tls sm
run -t fan_in -N 1 -T 64M -s 100000 -r 1 --idle 0 --tls sm
# HIXL_BENCH_STATS: every engine writes its figures over time; the
# prefill's completed bytes grow to at least what it moved (32 MiB) and
# never fall, and the decode's file is there
stats=$(mktemp -d) || exit 1
HIXL_BENCH_STATS=$stats/fan run -t fan_in -N 1 -T 32M -s 1M -r 1 --idle 0 \
    --tls tcp --no-baseline
for role in prefill decode; do
    set -- "$stats"/fan-"$role"-*.csv
    if [ ! -s "$1" ] || [ "$(wc -l <"$1")" -lt 2 ]; then
        echo "FAILED: HIXL_BENCH_STATS wrote no $role figures"; rc=1
    fi
done
set -- "$stats"/fan-prefill-*.csv
if ! awk -F, 'NR > 1 { if ($2 < last) bad = 1; last = $2 }
              END { exit (bad || last < 33554432) }' "$1"; then
    echo "FAILED: the prefill's completed bytes: $(tail -n 3 "$1")"; rc=1
fi
rm -rf "$stats"
exit $rc
