"""Truncated spectra (Note [Truncated spectra]) across grid sizes and kept fractions.

The reference FNO layer (``torchcx.bench.workloads.fno.SpectralConv2d``: two corners of
k x k modes of the half spectrum), forward and backward of an MSE loss, on a batch of 8
with 32 channels, at grids of 32, 64 and 128 and k = n/16, n/8, n/4 (so 2k/n = 1/8, 1/4,
1/2 of the rows kept). Five modes, interleaved in every repetition (the order reversed
every other one), one process, one thread: eager; torchcx as it chooses (the default,
``config.truncated_spectra``); torchcx with each strategy forced, DFT products over the
kept modes and FFTs with the columns pruned; torchcx with the setting off (every FFT in
full). The rule (``_truncation`` in ``_graph_passes.py``) should pick the fastest of
the last three at every point.

    python benchmarks/truncated_spectra.py            # --reps 15 --threads 1 --grids 32,64,128
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable
from unittest import mock

import torch
import torch.nn.functional as F

import torchcx
from torchcx import _graph_passes
from torchcx.bench.workloads.fno import SpectralConv2d


def _forced(strategy: str, loss: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> Callable[..., object]:
    """``loss`` compiled by torchcx with every truncation computed by ``strategy`` (forced
    only where the rule would truncate at all: both strategies need at most half the columns)."""

    def rule(n: int, m: int, rows: int, cols: int, *, chosen: Callable[..., str | None] = _graph_passes._truncation):
        return strategy if chosen(n, m, rows, cols) is not None else None

    compiled = torchcx.compile(loss)
    with mock.patch.object(_graph_passes, "_truncation", rule):
        compiled(x)  # (Dynamo's graph is rewritten at the first call)
    return compiled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--grids", default="32,64,128")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)

    print(f"{args.threads} thread(s), median of {args.reps} interleaved reps, forward + backward, ms")
    print("| grid | k | rows kept | eager | torchcx | DFT products | pruned FFTs | full FFTs | chosen | vs eager |")
    print("|" + " --- |" * 10)
    for n in map(int, args.grids.split(",")):
        for k in (n // 16, n // 8, n // 4):
            torch.manual_seed(0)
            layer = SpectralConv2d(32, 32, k, k)
            params = list(layer.parameters())
            g = torch.Generator().manual_seed(0)
            x, target = torch.randn(8, 32, n, n, generator=g), torch.randn(8, 32, n, n, generator=g)

            def loss(x: torch.Tensor, layer: SpectralConv2d = layer, target: torch.Tensor = target) -> torch.Tensor:
                return F.mse_loss(layer(x), target)

            def step(fn: object, x: torch.Tensor = x, params: list[torch.Tensor] = params) -> Callable[[], object]:
                return lambda: torch.autograd.grad(fn(x), params)  # type: ignore[operator]

            # (one reset, then every compiled mode: a reset between them would recompile the
            # earlier ones at their next call, under the later one's settings)
            torch._dynamo.reset()
            with torchcx.config.patch(truncated_spectra=False):
                full = torchcx.compile(loss)
                full(x)
            with torchcx.config.patch(truncated_spectra=True):
                chosen = torchcx.compile(loss)
                chosen(x)
                dft, pruned = _forced("dft", loss, x), _forced("pruned", loss, x)
            modes = {
                m: step(f)
                for m, f in [("eager", loss), ("torchcx", chosen), ("dft", dft), ("pruned", pruned), ("full", full)]
            }
            expected = modes["eager"]()
            for m in list(modes)[1:]:
                for a, e in zip(modes[m](), expected):
                    torch.testing.assert_close(a, e, rtol=1e-3, atol=1e-5 * e.abs().max().item())
            times: dict[str, list[float]] = {m: [] for m in modes}
            for rep in range(args.reps):
                for m, fn in list(modes.items())[:: -1 if rep % 2 else 1]:
                    start = time.perf_counter()
                    fn()
                    times[m].append(time.perf_counter() - start)
            ms = {m: 1e3 * statistics.median(t) for m, t in times.items()}
            rule = _graph_passes._truncation(n, n, 2 * k, k) or "full"
            print(
                f"| {n} | {k} | {2 * k}/{n} | {ms['eager']:.2f} | {ms['torchcx']:.2f} | {ms['dft']:.2f} "
                f"| {ms['pruned']:.2f} | {ms['full']:.2f} | {rule} | {ms['eager'] / ms['torchcx']:.2f}x |",
                flush=True,
            )


if __name__ == "__main__":
    main()
