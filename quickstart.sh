#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# libhixl-ucx quick start, for a fresh Debian 12 machine (run as root, or as
# a user when the packages below are already installed).
#
#   ./quickstart.sh demo [pd_pipeline options]   set up, build, run the
#                                                prefill->decode demo
#   ./quickstart.sh test                         set up, build, run the tests
#   ./quickstart.sh vs_perftest [its options]    set up (plus gnuplot for its
#                                                plot), build, run
#                                                bench/vs_perftest
#   ./quickstart.sh vs_peers [its options]       set up, build, make a venv
#                                                with NIXL and Mooncake from
#                                                PyPI (bench/vs_peers_setup.sh),
#                                                run bench/vs_peers
#
# Set-up installs only the Debian packages that are missing.  The build
# uses Debian's /usr/bin/python3 (the one python3-numpy and friends belong
# to) unless PYTHON is set.
set -eu

cd "$(dirname "$0")"
what=${1:-}
[ $# -gt 0 ] && shift

case "$what" in
    demo|test|vs_perftest|vs_peers) ;;
    *) echo "usage: $0 demo [pd_pipeline options] | test | vs_perftest [options] | vs_peers [options]" >&2
       exit 2 ;;
esac

# build and test: the library, its tests (Check), the Python package's
# tests (an offline venv install moving numpy arrays), the installed-copy
# test (CMake), the two-namespace test (iproute2), the metrics endpoint
# (libmicrohttpd)
packages="build-essential autoconf automake libtool pkg-config libucx-dev \
ucx-utils check libsubunit-dev libssl-dev python3 python3-venv python3-pip \
python3-setuptools python3-wheel python3-numpy cmake iproute2 \
libmicrohttpd-dev"
# the tests run bench/pd_torch.py, a small PyTorch model's prefill ->
# decode (Debian's torch, CPU only; large, so only `test` installs it)
if [ "$what" = test ]; then
    packages="$packages python3-torch"
    # the metrics' Python collector (test/py/it_py_metrics.sh), and the
    # Prometheus server that scrapes two engines (test/py/it_prometheus.sh)
    packages="$packages python3-prometheus-client prometheus"
fi
# bench/vs_perftest and bench/vs_peers draw their plots with gnuplot (only
# those modes install it)
if [ "$what" = vs_perftest ] || [ "$what" = vs_peers ]; then
    packages="$packages gnuplot-nox"
fi

missing=""
for p in $packages; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "quickstart: missing Debian packages:$missing (run as root to install them)" >&2
        exit 1
    fi
    echo "quickstart: installing$missing"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
fi

[ -x configure ] || ./autogen.sh
# Build in build/ unless this tree was configured in place already.
if [ -f config.status ]; then
    build=.
else
    build=build
    mkdir -p "$build"
    if [ -z "${PYTHON:-}" ] && [ -x /usr/bin/python3 ]; then
        PYTHON=/usr/bin/python3   # not a python3 from elsewhere on PATH
        export PYTHON
    fi
    [ -f "$build/Makefile" ] || (cd "$build" && ../configure)
fi
make -C "$build" -j"$(nproc)"

case "$what" in
    demo)
        # Both engines run on this host: shared memory is the transport a
        # deployment would pick here (UCX 1.13 takes tcp loopback by default,
        # see README "Known limitations").  UCX_TLS=tcp ./quickstart.sh demo
        # shows the tcp figures instead.
        if [ -z "${UCX_TLS:-}" ]; then
            export UCX_TLS=sm
            echo "quickstart: UCX_TLS=sm (one host; set UCX_TLS to choose)"
        fi
        exec "$build/bench/pd_pipeline" "$@"
        ;;
    test)
        if ! make -C "$build" -j"$(nproc)" check; then
            cat "$build/test/test-suite.log" 2>/dev/null || true
            exit 1
        fi
        ;;
    vs_perftest)
        exec bench/vs_perftest --put-bw "$build/bench/put_bw" "$@"
        ;;
    vs_peers)
        # the peers come from PyPI into a venv of their own
        # (VS_PEERS_VENV, default /opt/hixl-vs-peers/venv); this library is
        # the one just built
        py=$(bench/vs_peers_setup.sh | tail -n 1)
        HIXL_UCX_LIB=$(cd "$build/src/.libs" && pwd)/libhixl-ucx.so.0
        export HIXL_UCX_LIB
        exec "$py" bench/vs_peers "$@"
        ;;
esac
