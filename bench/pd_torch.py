#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""pd_torch: prefill -> decode of a real (small) transformer over hixl.

A decoder-only transformer (grouped-query attention, rotary positions,
RMSNorm, SwiGLU; weights from a fixed seed, nothing downloaded) is split
the way disaggregated serving splits it:

  decode   owns a paged KV cache (one torch tensor per layer for K and one
           for V, [blocks, block_size, kv_heads, head_dim] float32,
           registered with the `hixl` module's engine), exports their
           description (Hixl.export_mem) and sends it with its block table
           and the model's shape to prefill by notify;
  prefill  runs the prompt layer by layer; as each layer's K and V are
           computed it writes them block by block into decode's cache,
           addressed by (region, offset) through the imported description
           (Hixl.import_mem), and flushes that layer (flush_layer) while
           the next one is computed;
  decode   waits per layer (wait_layer) and runs its first token's forward
           pass layer by layer as the KV lands, then generates more tokens
           from its own cache.

Decode compares its tokens with a single-process reference generation
(same model, prompt and seed): token ids must be equal and the first
token's logits within --tolerance (max abs difference, float32), else it
exits non-zero.  Modes: pipelined (per layer, overlapped with compute),
bulk (every layer after the whole prefill) and staged (host copy over a
plain TCP socket, no hixl); each prints prefill compute time, the time
from the end of prefill to the first generated token at decode, and the
bytes moved.
"""

import argparse
import os
import subprocess
import sys
USAGE_EXAMPLES = """\
roles:
  run      one host: forks decode and prefill (UCX_TLS=sm unless set)
  decode   --listen IP:PORT   owns the paged KV cache, runs generation
  prefill  --decode IP:PORT   runs the prompt, writes the KV into decode

examples:
  pd_torch run                                   # one host, every mode
  pd_torch run --layers 8 --dim 64 --prompt-len 40 --new-tokens 4
  # two hosts (UCX_TLS=tcp or rc; UCX_NET_DEVICES as for any UCX program):
  hostB$ pd_torch decode --listen 10.0.0.2:16000
  hostA$ pd_torch prefill --decode 10.0.0.2:16000

The model's shape, prompt, seed, modes and block size are decode's
options: prefill learns them from decode's layout notify.  The time from
the end of prefill to the first token compares the two hosts' wall
clocks: keep them synchronised (NTP/PTP) when measuring across machines.
Exit status: 0 when every mode matched the reference, 1 on a mismatch,
2 on an error (a transfer FAILED or TIMEOUT, a peer that went away), 77
without PyTorch.

Needs PyTorch (Debian: python3-torch; CPU only) and the `hixl` Python
package with libhixl-ucx: after make install it is found; from a source
tree set PYTHONPATH=<source>/python and
HIXL_UCX_LIB=<build>/src/.libs/libhixl-ucx.so.0.  Notifies are waited for
by polling every millisecond; layers with wait_layer.
"""

# The roles' modules: beside this file in a source tree; the build tree's
# copy of this script reads the source tree's; make install's copy reads
# the package data directory (make writes both paths in).
_HERE = os.path.dirname(os.path.realpath(__file__))
if os.path.isfile(os.path.join(_HERE, "pd_torch_model.py")):
    sys.path.insert(0, _HERE)
elif _HERE == os.path.realpath("@PD_TORCH_BUILDDIR@"):
    sys.path.insert(0, "@PD_TORCH_SRCDIR@")
else:
    sys.path.insert(0, "@PD_TORCH_DATADIR@")


def run_both(args, argv):
    env = dict(os.environ)
    env.setdefault("UCX_TLS", "sm")
    me = [sys.executable, os.path.abspath(__file__)]
    role_args = [a for a in argv if a != "run"]
    dec = subprocess.Popen(me + ["decode", "--listen", "127.0.0.1:0"] +
                           role_args, env=env, stdout=subprocess.PIPE,
                           text=True)
    procs = [dec]
    try:
        first = dec.stdout.readline()
        sys.stdout.write(first)
        if "listening on " not in first:
            print("pd_torch: decode did not start", file=sys.stderr)
            return 2
        name = first.split("listening on ")[1].strip()
        procs.append(subprocess.Popen(
            me + ["prefill", "--decode", name] +
            (["--quiet"] if args.quiet else []) +
            ["--threads", str(args.threads),
             "--timeout-ms", str(args.timeout_ms),
             "--peer-wait-s", str(args.peer_wait_s)], env=env))
        for line in dec.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
        # both roles bound their own waits; this only catches a hang
        limit = args.peer_wait_s + 60
        pre_rc = procs[1].wait(timeout=limit)
        dec_rc = dec.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        print("pd_torch: a role did not end in time", file=sys.stderr)
        return 2
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    print("pd_torch: decode exit %d, prefill exit %d" % (dec_rc, pre_rc))
    return max(dec_rc, pre_rc)


# ---- command line --------------------------------------------------------------

def parse(argv):
    p = argparse.ArgumentParser(
        prog="pd_torch", description=__doc__,
        epilog=USAGE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("role", choices=("run", "decode", "prefill"),
                   help="run: both on this host; decode / prefill: one role")
    p.add_argument("--listen", metavar="IP:PORT",
                   help="decode: the engine name to listen on")
    p.add_argument("--decode", metavar="IP:PORT",
                   help="prefill: decode's engine name")
    p.add_argument("--local", metavar="IP",
                   help="prefill: its own address (default: the one on the "
                   "route to decode)")
    g = p.add_argument_group("model and cache (decode's; prefill learns them)")
    g.add_argument("--layers", type=int, default=12)
    g.add_argument("--dim", type=int, default=256, help="model width")
    g.add_argument("--heads", type=int, default=8, help="query heads")
    g.add_argument("--kv-heads", type=int, default=2,
                   help="K/V heads (grouped-query attention)")
    g.add_argument("--ffn", type=int, default=768, help="SwiGLU width")
    g.add_argument("--vocab", type=int, default=512)
    g.add_argument("--seed", type=int, default=1234,
                   help="weights and prompt come from it")
    g.add_argument("--prompt-len", type=int, default=128)
    g.add_argument("--new-tokens", type=int, default=16,
                   help="tokens decode generates after the first")
    g.add_argument("--block-size", type=int, default=16,
                   help="tokens per KV cache block")
    g.add_argument("--modes", default="pipelined,bulk,staged",
                   help="comma-separated: pipelined, bulk, staged")
    g.add_argument("--tolerance", type=float, default=1e-4,
                   help="first-token logits: max abs difference allowed")
    g.add_argument("--threads", type=int, default=1,
                   help="torch threads per role (the reference runs alike)")
    p.add_argument("--timeout-ms", type=int, default=30000,
                   help="every hixl call and wait_layer")
    p.add_argument("--peer-wait-s", type=float, default=120,
                   help="how long to wait for the other role's notifies")
    p.add_argument("--quiet", action="store_true",
                   help="prefill: no per-mode lines")
    args = p.parse_args(argv)
    args.modes = [m for m in args.modes.split(",") if m]
    for m in args.modes:
        if m not in ("pipelined", "bulk", "staged"):
            p.error("unknown mode %r" % m)
    if args.role == "decode" and not args.listen:
        p.error("decode needs --listen IP:PORT")
    if args.role == "prefill" and not args.decode:
        p.error("prefill needs --decode IP:PORT")
    if args.prompt_len < 2:
        p.error("--prompt-len must be at least 2")
    return args


# Debian's interpreter, the one python3-torch installs into
SYSTEM_PYTHON = "/usr/bin/python3"


def has_torch(python):
    """Whether `python` can import torch (quietly, in a child)."""
    try:
        return subprocess.run([python, "-c", "import torch"],
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL,
                              timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def need_torch(argv):
    """Return when this interpreter has torch; else run again with Debian's
    python3 when that one has it (the script's first line may name
    another python3 found on PATH at build time: a pyenv shim, a venv),
    else say which interpreter lacks it and exit 77."""
    try:
        import torch  # noqa: F401
        return
    except ImportError:
        pass
    # a venv's python3 may be Debian's binary under another prefix: the
    # path, not the binary, says which site-packages it sees
    if (os.environ.get("PD_TORCH_REEXEC") is None and
            os.path.abspath(sys.executable) != SYSTEM_PYTHON and
            has_torch(SYSTEM_PYTHON)):
        os.environ["PD_TORCH_REEXEC"] = sys.executable
        print("pd_torch: %s has no PyTorch; running with %s" %
              (sys.executable, SYSTEM_PYTHON), file=sys.stderr)
        sys.stderr.flush()
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(__file__)] +
                 list(argv))
    print("pd_torch: needs PyTorch, which %s cannot import (Debian: "
          "apt-get install python3-torch, then run pd_torch with %s; pip: "
          "torch)" % (sys.executable, SYSTEM_PYTHON), file=sys.stderr)
    sys.exit(77)


def main(argv):
    args = parse(argv)
    need_torch(argv)
    if args.role == "run":
        return run_both(args, argv)
    import torch
    import hixl
    from pd_torch_decode import decode_role
    from pd_torch_link import PdError
    from pd_torch_prefill import prefill_role
    torch.set_num_threads(args.threads)
    try:
        if args.role == "decode":
            return decode_role(args, torch, hixl)
        return prefill_role(args, torch, hixl)
    except PdError as exc:
        print("pd_torch %s: %s" % (args.role, exc), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
