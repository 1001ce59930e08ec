"""neuraloperator's models, unmodified, forward + backward: eager vs torch.compile vs torchcx (issue 15).

FNO (2-D, 4 layers, 16 modes (`--n-modes`), hidden channels 32), TFNO (the same with its
default Tucker-factorized weights) on a batch of 8 real 3-channel 64x64
inputs, and a SpectralConv with ``complex_data=True`` (32 channels, 16 modes)
on complex 8x32x64x64 inputs. Each step is the model, a mean-square loss and
``torch.autograd.grad`` for every parameter. One process, one thread; the
three modes interleaved in every repetition and the median reported, so that
other load on the machine hits them alike. Compile time is the first call
(forward and backward) after ``torch._dynamo.reset()`` with Inductor's caches
off. "torchcx full" is torchcx with ``config.truncated_spectra`` off (every FFT computed
in full: Note [Truncated spectra]), the same run's before/after. Graph counts are Dynamo's graphs and breaks, and the graphs torchcx
lowered (``torchcx.explain``). Needs the ``integration`` extra:

    pip install -e '.[integration]'
    python benchmarks/neuraloperator.py            # --reps 20 --threads 1
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable

import torch

import torchcx

Step = Callable[[torch.Tensor], tuple[torch.Tensor, ...]]


def models(n_modes: int = 16) -> list[tuple[str, torch.nn.Module, torch.Tensor]]:
    from neuralop.layers.spectral_convolution import SpectralConv
    from neuralop.models import FNO, TFNO

    torch.manual_seed(0)
    modes = (n_modes, n_modes)
    shape = dict(n_modes=modes, in_channels=3, out_channels=1, hidden_channels=32, n_layers=4)
    x = torch.randn(8, 3, 64, 64)
    z = torch.randn(8, 32, 64, 64, dtype=torch.complex64)
    return [
        ("FNO", FNO(**shape), x),
        ("TFNO (Tucker)", TFNO(**shape), x),
        ("SpectralConv complex_data", SpectralConv(32, 32, n_modes=modes, complex_data=True), z),
    ]


def training_step(model: torch.nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    def loss(x: torch.Tensor) -> torch.Tensor:
        y = model(x)
        return (y.abs() ** 2).mean() if y.is_complex() else (y**2).mean()

    return loss


def with_grads(loss: Callable[[torch.Tensor], torch.Tensor], params: list[torch.Tensor]) -> Step:
    def step(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        value = loss(x)
        return (value, *torch.autograd.grad(value, params))

    return step


def first_call_seconds(step: Step, x: torch.Tensor) -> float:
    torch._dynamo.reset()
    start = time.perf_counter()
    step(x)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--models", default="", help="comma-separated name prefixes (FNO,TFNO,SpectralConv)")
    parser.add_argument("--n-modes", type=int, default=16, help="the models' n_modes along each axis (64x64 grids)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    torch._inductor.config.force_disable_caches = True  # compile times are cold

    rows = []
    for name, model, x in models(args.n_modes):
        if args.models and not any(name.startswith(m) for m in args.models.split(",")):
            continue
        params = list(model.parameters())
        loss = training_step(model)
        report = torchcx.explain(loss, x, backward=True)
        dynamo_default = torch._dynamo.explain(loss)(x)
        torch._dynamo.reset()
        with torchcx.config.patch(truncated_spectra=False):
            full_spectra = torchcx.compile(loss)  # (the setting is read here: Note [Settings are ...])
        with torchcx.config.patch(truncated_spectra=True):
            truncated = torchcx.compile(loss)
        modes: dict[str, Step] = {
            "eager": with_grads(loss, params),
            "default": with_grads(torch.compile(loss), params),
            "torchcx": with_grads(truncated, params),
            "full": with_grads(full_spectra, params),
        }
        compiled = ("default", "torchcx", "full")
        compile_s = {m: first_call_seconds(modes[m], x) for m in compiled}
        # The compiled functions are warm now (reset() only drops Dynamo's caches before a first call).
        for m in compiled:
            modes[m](x)
        expected = modes["eager"](x)
        for got in (modes[m](x) for m in compiled):
            for e, g in zip(expected, got):
                torch.testing.assert_close(g, e, rtol=1e-3, atol=1e-5 * e.abs().max().item())
        times: dict[str, list[float]] = {m: [] for m in modes}
        for _ in range(args.reps):
            for m, step in modes.items():
                start = time.perf_counter()
                step(x)
                times[m].append(time.perf_counter() - start)
        ms = {m: 1e3 * statistics.median(t) for m, t in times.items()}
        kinds = "+".join(g.kind[0] for g in report.graphs)  # f(orward), b(ackward)
        rows.append(
            (
                name,
                ms,
                f"{report.dynamo_graphs}/{len(report.graph_breaks)} ({kinds})",
                f"{dynamo_default.graph_count}/{dynamo_default.graph_break_count}",
                compile_s,
            )
        )
        print(f"{name}: done", flush=True)
        _print_table(args, rows[-1:])  # (each row as it is measured: the whole run is long)
    _print_table(args, rows)


def _print_table(args: argparse.Namespace, rows: list[tuple[object, ...]]) -> None:
    print(f"\n{args.threads} thread(s), median of {args.reps} interleaved reps, forward + backward")
    print("(torchcx full: torchcx with truncated_spectra=False, every FFT computed in full)")
    header = "| model | eager ms | default ms | torchcx ms | torchcx full ms | default speedup | torchcx speedup "
    header += "| torchcx full speedup | graphs/breaks torchcx | graphs/breaks default | compile default s "
    header += "| compile torchcx s | compile torchcx full s |"
    print(header)
    print("|" + " --- |" * 13)
    for name, ms, cx_graphs, default_graphs, compile_s in rows:
        print(
            f"| {name} | {ms['eager']:.1f} | {ms['default']:.1f} | {ms['torchcx']:.1f} | {ms['full']:.1f} "
            f"| {ms['eager'] / ms['default']:.2f}x | {ms['eager'] / ms['torchcx']:.2f}x "
            f"| {ms['eager'] / ms['full']:.2f}x | {cx_graphs} | {default_graphs} | {compile_s['default']:.1f} "
            f"| {compile_s['torchcx']:.1f} | {compile_s['full']:.1f} |"
        )


if __name__ == "__main__":
    main()
