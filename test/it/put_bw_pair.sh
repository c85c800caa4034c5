# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the tests that run bench/put_bw: put_bw_pair ARGS... starts a
# server and a client with ARGS on loopback, on port $port (then the next
# one), and sets rc=1 when either side fails (exit 3 means bad data).
# The caller sets put_bw, port and rc.
# The server is given up to 10 s to listen; one that exits first (its
# port taken by another program meanwhile) is started again on the next
# port, up to 5 times.
put_bw_server() {
    tries=0
    while [ $tries -lt 5 ]; do
        timeout 120 "$put_bw" -p $port -q --timeout 60 >/dev/null 2>&1 &
        srv=$!
        waited=0
        while [ $waited -lt 100 ] && kill -0 $srv 2>/dev/null; do
            if command -v ss >/dev/null 2>&1; then
                [ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ] && return 0
            elif [ $waited -ge 5 ]; then
                return 0   # no ss: half a second, as before
            fi
            sleep 0.1
            waited=$((waited + 1))
        done
        kill -0 $srv 2>/dev/null && return 0   # slow, but alive
        wait $srv
        port=$((port + 1))
        tries=$((tries + 1))
    done
    return 1
}

put_bw_pair() {
    put_bw_server
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
