#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: bench/pd_torch.py on one host (UCX_TLS=sm), a small model
# and prompt, every mode: decode's tokens must equal the single-process
# reference and the first token's logits be within tolerance (pd_torch
# exits non-zero otherwise).  SKIP (77) without Python or PyTorch.
# Interpreter, library and package: py_env.sh (exit 77 without Python).
. "${srcdir:-$(dirname "$0")/..}/py/py_env.sh"
"$PYTHON" -c "import torch" >/dev/null 2>&1 ||
    { echo "SKIP: $PYTHON cannot import torch (Debian: apt-get install python3-torch)"; exit 77; }
command -v timeout >/dev/null 2>&1 || { echo "SKIP: no timeout (coreutils)"; exit 77; }
unset HIXL_LOG_LEVEL
UCX_TLS=sm timeout 240 "$PYTHON" "$srcdir/../bench/pd_torch.py" run \
    --layers 8 --dim 64 --ffn 128 --prompt-len 40 --new-tokens 4 \
    --timeout-ms 30000 --peer-wait-s 60 >pd_torch.out 2>&1
rc=$?
cat pd_torch.out
[ $rc = 0 ] || { echo "FAIL: pd_torch run exited $rc"; rm -f pd_torch.out; exit 1; }
n=$(grep -c ": ok$" pd_torch.out)
rm -f pd_torch.out
[ "$n" = 3 ] || { echo "FAIL: $n of 3 modes matched the reference"; exit 1; }
echo "PASS: pd_torch on one host, 3 modes equal to the reference"

# Started by an interpreter without PyTorch (the script's first line may
# name a python3 of PATH at build time: a pyenv shim, a venv), pd_torch
# runs again with Debian's python3 when that one has it.
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import torch" >/dev/null 2>&1 &&
   venv=$(mktemp -d) && "$PYTHON" -m venv --without-pip "$venv/py" >/dev/null 2>&1; then
    UCX_TLS=sm timeout 240 "$venv/py/bin/python3" "$srcdir/../bench/pd_torch.py" run \
        --layers 2 --dim 32 --ffn 64 --prompt-len 16 --new-tokens 2 \
        --timeout-ms 30000 --peer-wait-s 60 >"$venv/out" 2>&1
    rc=$?
    cat "$venv/out"
    again=$(grep -c "has no PyTorch; running with /usr/bin/python3" "$venv/out")
    n=$(grep -c ": ok$" "$venv/out")
    rm -rf "$venv"
    [ $rc = 0 ] && [ "$again" -ge 1 ] && [ "$n" = 3 ] ||
        { echo "FAIL: pd_torch from an interpreter without PyTorch: exit $rc, re-run said $again times, $n of 3 modes matched"; exit 1; }
    echo "PASS: pd_torch from an interpreter without PyTorch ran with Debian's python3"
else
    echo "(no second interpreter without PyTorch here: the fallback is not tried)"
fi
