#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/put_bw over shared memory with copies large enough, or into a
# region large enough, that same-host copies bypass the caches
# (src/util/copy.h): READs into the reader's own region and WRITEs into
# the peer's, in 4 MiB descriptors and in 100000- and 10000-byte ones
# whose addresses start off a cache line.  put_bw checks every byte of a
# patterned transfer after each measurement (exit 3 on bad data).  It
# measures nothing.
set -u
# automake runs tests from the build directory (VPATH builds included)
builddir=$(pwd)
put_bw=$builddir/../bench/put_bw
[ -x "$put_bw" ] || { echo "no $put_bw: skipped (make, then make check)"; exit 77; }
command -v timeout >/dev/null || { echo "no timeout(1): skipped"; exit 77; }
export UCX_TLS=sm

port=$((20000 + $$ % 20000))
rc=0
. "$(dirname "$0")/put_bw_pair.sh"
put_bw_pair -t get_bw -s 4M -n 20 -w 1
put_bw_pair -t get_bw -s 100000 -b 700 -n 3 -w 1
put_bw_pair -t put_bw -s 100000 -b 700 -n 3 -w 1
# pieces under the 32 KiB floor of a copy judged by its own length, in a
# region large enough that they stream anyway (a paged KV cache)
put_bw_pair -t get_bw -s 10000 -b 7000 -n 3 -w 1
put_bw_pair -t put_bw -s 10000 -b 7000 -n 3 -w 1
exit $rc
