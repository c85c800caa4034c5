# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the tests that run bench/put_bw: put_bw_pair ARGS... starts a
# server and a client with ARGS on loopback, on port $port (then the next
# one), and sets rc=1 when either side fails (exit 3 means bad data).
# The caller sets put_bw, port and rc.
put_bw_pair() {
    timeout 120 "$put_bw" -p $port -q --timeout 60 >/dev/null 2>&1 &
    srv=$!
    sleep 0.5
    out=$(timeout 120 "$put_bw" 127.0.0.1 -p $port "$@" --timeout 60 2>&1)
    crc=$?
    wait $srv
    src=$?
    if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
        echo "put_bw $*: client exit $crc, server exit $src"
        echo "$out" | tail -5
        rc=1
    else
        echo "put_bw $*: ok"
    fi
    port=$((port + 1))
}
