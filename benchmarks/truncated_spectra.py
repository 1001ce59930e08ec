"""Truncated spectra (Note [Truncated spectra]) across grid sizes and kept fractions.

The reference FNO layer (``torchcx.bench.workloads.fno.SpectralConv2d``: two corners of
k x k modes of the half spectrum), forward and backward of an MSE loss, on a batch of 8
with 32 channels, at grids of 32, 64 and 128 and k = n/16, n/8, n/4 (so 2k/n = 1/8, 1/4,
1/2 of the rows kept: the rewrite's limit is 1/2). Three modes, interleaved in every
repetition, one process, one thread: eager, torchcx with ``config.truncated_spectra``
(the default) and torchcx with it off (every FFT in full). The ratio that decides the
rule is the last column: full / truncated.

    python benchmarks/truncated_spectra.py            # --reps 15 --threads 1 --grids 32,64,128
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import torch
import torch.nn.functional as F

import torchcx
from torchcx.bench.workloads.fno import SpectralConv2d


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--grids", default="32,64,128")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)

    print(f"{args.threads} thread(s), median of {args.reps} interleaved reps, forward + backward, ms")
    print("| grid | k | rows kept | eager | torchcx | torchcx full | vs eager | full / truncated |")
    print("|" + " --- |" * 8)
    for n in map(int, args.grids.split(",")):
        for k in (n // 16, n // 8, n // 4):
            torch.manual_seed(0)
            layer = SpectralConv2d(32, 32, k, k)
            params = list(layer.parameters())
            g = torch.Generator().manual_seed(0)
            x, target = torch.randn(8, 32, n, n, generator=g), torch.randn(8, 32, n, n, generator=g)

            def loss(x: torch.Tensor, layer: SpectralConv2d = layer, target: torch.Tensor = target) -> torch.Tensor:
                return F.mse_loss(layer(x), target)

            def step(fn: object, x: torch.Tensor = x, params: list[torch.Tensor] = params) -> object:
                return lambda: torch.autograd.grad(fn(x), params)  # type: ignore[operator]

            torch._dynamo.reset()
            with torchcx.config.patch(truncated_spectra=False):
                full = torchcx.compile(loss)
            with torchcx.config.patch(truncated_spectra=True):
                truncated = torchcx.compile(loss)
            modes = {"eager": step(loss), "torchcx": step(truncated), "full": step(full)}
            expected = modes["eager"]()
            for m in ("torchcx", "full"):
                for a, e in zip(modes[m](), expected):
                    torch.testing.assert_close(a, e, rtol=1e-3, atol=1e-5 * e.abs().max().item())
            times: dict[str, list[float]] = {m: [] for m in modes}
            for _ in range(args.reps):
                for m, fn in modes.items():
                    start = time.perf_counter()
                    fn()
                    times[m].append(time.perf_counter() - start)
            ms = {m: 1e3 * statistics.median(t) for m, t in times.items()}
            print(
                f"| {n} | {k} | {2 * k}/{n} | {ms['eager']:.2f} | {ms['torchcx']:.2f} | {ms['full']:.2f} "
                f"| {ms['eager'] / ms['torchcx']:.2f}x | {ms['full'] / ms['torchcx']:.2f}x |",
                flush=True,
            )


if __name__ == "__main__":
    main()
