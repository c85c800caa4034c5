#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Set up what bench/vs_peers needs, installing only what is missing (run it
# again: it does nothing the second time):
#   - Debian packages: python3-venv, python3-numpy, gnuplot-nox (root only;
#     as a user it names what is missing and stops);
#   - a virtual environment, VS_PEERS_VENV (default /opt/hixl-vs-peers/venv),
#     made from Debian's /usr/bin/python3 with --system-site-packages (so
#     Debian's numpy is in it), holding the two peers from PyPI:
#     nixl[cu12] 1.5.x and mooncake-transfer-engine-non-cuda 0.3.13.x.
# The library and its own tests keep using Debian's packages only; the
# peers live in the venv alone.  Prints the venv's python on its last line.
set -eu

venv=${VS_PEERS_VENV:-/opt/hixl-vs-peers/venv}
nixl_req='nixl[cu12]>=1.5,<1.6'
mooncake_req='mooncake-transfer-engine-non-cuda>=0.3.13,<0.3.14'

missing=""
for p in python3-venv python3-numpy gnuplot-nox; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "vs_peers_setup: missing Debian packages:$missing (run as root to install them)" >&2
        exit 1
    fi
    echo "vs_peers_setup: installing$missing" >&2
    apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing >&2
fi

py=$venv/bin/python
if [ ! -x "$py" ]; then
    echo "vs_peers_setup: creating $venv" >&2
    mkdir -p "$(dirname "$venv")"
    /usr/bin/python3 -m venv --system-site-packages "$venv"
fi

have() {
    "$py" -c "import $1" >/dev/null 2>&1
}

want=""
have "nixl._api" || want="$want $nixl_req"
have "mooncake.engine" || want="$want $mooncake_req"
if [ -n "$want" ]; then
    echo "vs_peers_setup: pip install$want" >&2
    # shellcheck disable=SC2086
    "$py" -m pip install --disable-pip-version-check -q $want >&2
fi

# NIXL's CUDA wheels may want libcuda.so.1 at import on a machine without a
# driver: give them the CUDA toolkit's stub, in the venv's own directory
# (vs_peers puts it on LD_LIBRARY_PATH of its workers when it exists).
if ! have "nixl._api"; then
    if "$py" -c "import nixl._api" 2>&1 | grep -q "libcuda"; then
        stub=$(ls /usr/local/cuda/lib64/stubs/libcuda.so \
                  /usr/local/cuda/lib/stubs/libcuda.so \
                  /usr/local/cuda-*/lib*/stubs/libcuda.so 2>/dev/null | head -n 1 || true)
        if [ -n "$stub" ]; then
            mkdir -p "$venv/cuda-stub"
            ln -sf "$stub" "$venv/cuda-stub/libcuda.so.1"
        fi
    fi
fi
if ! LD_LIBRARY_PATH="$venv/cuda-stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$py" -c "import nixl._api, mooncake.engine" >/dev/null 2>&1; then
    echo "vs_peers_setup: the peers do not import in $venv:" >&2
    LD_LIBRARY_PATH="$venv/cuda-stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$py" -c "import nixl._api, mooncake.engine" >&2 || true
    exit 1
fi
echo "$py"
