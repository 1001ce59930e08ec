"""Cold compile time of single ops under two or more versions of torchcx, processes alternating.

    python benchmarks/compile_versions.py --versions cba2101,HEAD --ops sub,sin,acos --rounds 4

Each version (a git ref) is checked out into a temporary worktree; each round runs one new
process per version, in alternating order, that times every op (its first complex64 OpInfo
sample, forward and backward where it has gradients: ``compile_time.py``'s measure, first call
minus a steady one, Inductor's caches off) with that version's ``src`` first on the path. The
benchmark code is this checkout's for every version. Medians and every sample are printed.
A change in how torchcx compiles shows here without the drift of a machine between two
``--all-ops`` runs an hour apart. Each row also shows its median net of Python's full garbage
collections (``compile_time.full_collections``): a process makes them at the same points
every round, so one can land in one op for one version and in another op for the other; the
sums at the end compare the versions as a whole.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def child(ops: list[str]) -> None:
    import torch

    torch.set_num_threads(1)
    from torch.testing._internal.common_methods_invocations import op_db

    import torchcx

    sys.path.insert(0, str(Path(__file__).parent))
    import compile_time

    torch._inductor.config.force_disable_caches = True
    compile_time.pay_one_time_costs()
    print("TORCHCX", torchcx.__file__, flush=True)
    for name in ops:
        op = next(o for o in op_db if name in (o.name, f"{o.name}.{o.variant_test_name}"))
        fn, args = compile_time.first_sample_program(op)
        with compile_time.full_collections() as collected:
            seconds = compile_time.compile_seconds(torchcx.compile, fn, args, 1, op.supports_autograd)
        print("ROW", name, seconds, collected[0], flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--versions", required=True, help="comma-separated git refs")
    parser.add_argument("--ops", required=True, help="comma-separated OpInfo names (name or name.variant)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    ops = options.ops.split(",")
    if options.child:
        child(ops)
        return
    versions = options.versions.split(",")
    samples: dict[tuple[str, str], list[float]] = {}
    net: dict[tuple[str, str], list[float]] = {}  # the same, less full garbage collections
    with tempfile.TemporaryDirectory() as tmp:
        trees = {}
        for i, ref in enumerate(versions):
            trees[ref] = os.path.join(tmp, f"v{i}")
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-f", "--detach", trees[ref], ref], check=True)
        try:
            for r in range(options.rounds):
                for ref in versions if r % 2 == 0 else versions[::-1]:
                    env = dict(os.environ, PYTHONPATH=os.path.join(trees[ref], "src"))
                    command = [sys.executable, __file__, "--child", "--versions", ref, "--ops", options.ops]
                    out = subprocess.run(command, env=env, capture_output=True, text=True)
                    if out.returncode:
                        sys.exit(f"{ref}: the child failed:\n{out.stderr[-3000:]}")
                    if f"TORCHCX {trees[ref]}" not in out.stdout:
                        sys.exit(f"{ref}: the child imported another torchcx:\n{out.stdout}")
                    for line in out.stdout.splitlines():
                        if line.startswith("ROW "):
                            _, name, seconds, collecting = line.split()
                            samples.setdefault((name, ref), []).append(float(seconds))
                            net.setdefault((name, ref), []).append(float(seconds) - float(collecting))
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", tree], check=False)
    print(f"{'op':<28}" + "".join(f"{ref:>14}" for ref in versions) + "   net of full collections   samples (s)")
    for name in ops:
        medians = "".join(f"{statistics.median(samples[(name, ref)]):13.2f}s" for ref in versions)
        nets = " ".join(f"{statistics.median(net[(name, ref)]):5.2f}s" for ref in versions)
        every = "  ".join(f"{ref}: {[round(x, 2) for x in samples[(name, ref)]]}" for ref in versions)
        print(f"{name:<28}{medians}   {nets:<24}  {every}")
    for label, table in (("sum of medians", samples), ("net of full collections", net)):
        sums = "".join(f"{sum(statistics.median(table[(n, ref)]) for n in ops):13.2f}s" for ref in versions)
        print(f"{label:<28}{sums}")


if __name__ == "__main__":
    main()
