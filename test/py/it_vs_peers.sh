#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: bench/vs_peers in its small form (--small: one small case of
# each job, one round, tcp and sm), this library beside NIXL and Mooncake
# Transfer Engine, every byte checked at the receiver; correctness only,
# its times are printed and never judged.  The peers live in a venv of
# their own (bench/vs_peers_setup.sh; VS_PEERS_VENV, default
# /opt/hixl-vs-peers/venv, or VS_PEERS_PYTHON naming its python): SKIP (77)
# when they are not installed, and in a sanitized build (the ASan runtime
# preloaded into Python would be preloaded into the peers' processes too).
. "${srcdir:-$(dirname "$0")/..}/py/py_env.sh"
case "${LD_PRELOAD:-}" in
    *libasan*) echo "SKIP: sanitized build (the peers' processes would run under ASan)"; exit 77 ;;
esac
vpy=${VS_PEERS_PYTHON:-${VS_PEERS_VENV:-/opt/hixl-vs-peers/venv}/bin/python}
if [ ! -x "$vpy" ]; then
    echo "SKIP: no peers venv at $vpy (bench/vs_peers_setup.sh makes it)"
    exit 77
fi
stub=$(dirname "$(dirname "$vpy")")/cuda-stub
if ! LD_LIBRARY_PATH="$stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$vpy" -c "import nixl._api, mooncake.engine, numpy" >/dev/null 2>&1; then
    echo "SKIP: $vpy cannot import nixl and mooncake (bench/vs_peers_setup.sh installs them)"
    exit 77
fi
command -v timeout >/dev/null 2>&1 || { echo "SKIP: no timeout (coreutils)"; exit 77; }
out=$(mktemp -d)
timeout 600 "$vpy" "$srcdir/../bench/vs_peers" --small \
    --pythonpath "${HIXL_UCX_PYTHONPATH:-$srcdir/../python}" --out "$out/small"
rc=$?
rm -rf "$out"
[ $rc = 0 ] || { echo "FAIL: vs_peers --small exited $rc"; exit 1; }
echo "PASS: vs_peers --small, three libraries, every byte right"
