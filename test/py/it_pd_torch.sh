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
