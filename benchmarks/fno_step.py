"""The suite's ``fno`` step (FNO SpectralConv2d forward + backward, B8 C32 64x64, 16 modes) with
and without the pruned FFTs of Note [Truncated spectra], against eager, the default
torch.compile and ``jax.jit``.

    python benchmarks/fno_step.py [--rounds 21] [--sample-s 0.1] [--scale full]

Modes: "torchcx" as it is; "full FFTs" with ``config.truncated_spectra`` off (every FFT
computed in full); "ATen's copies" with the transforms' inputs as they come (Note [Transforms
laid out for MKL]: ATen copies three of them with a transpose before its MKL call); "reshapes
copied" with the GEMM's reshaped operands copied over the reshape's shape (Note [Reshaped
extern inputs realized in their own shape], src/torchcx/_inductor_patches.py); "conjugates
copied" with the saved ``_conj`` of each GEMM operand written again by a kernel of its own
(``_unconjugated`` in src/torchcx/_boundary/retrace.py); "cat inputs gathered" with the
backward's GEMM operands gathered into their cat through the reshape (Note [Reshaped cat
inputs realized in their own shape]); "moves of halves" without Note [Moves on words]
(src/torchcx/_graph_passes.py): the pads, transposing copies and scatters between a split of
complex64 words and a join moving each half; "scaled before transforms" without Note [Scalar
factors after transforms] (the backward's loss gradient scaled in a pass of its own before the
FFT); "skinny products as blocks" with Note [GEMM strategy rule] as it was before 2026-12-07
(the weight gradients' products, 256 of 32x8 @ 8x32 with operands the backward computes, as
one real GEMM on block operands instead of MKL's cgemm); "padded by the transform" with the
inverse's zero columns added by irfft's own padding instead of a ``cat`` (Note [Truncated
spectra]); "merged dims gathered" without Note [Merged dims split before a copy] (the weight
gradients' operands copied with each merged mode index split by division). ``--modes`` picks
some of these (torchcx is always run). All in
one process, caches off, static shapes, interleaved round by round (the order changed every
round; each sample is enough calls for ``--sample-s``), one thread (one core for JAX too);
median (fastest) ms per call, and the median over rounds of the ratio of each other torchcx
mode's sample to torchcx's (each round's samples ran side by side). How the modes
are compiled and timed: ``benchmarks/_switched.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
from collections.abc import Callable
from typing import Any

import torch
from _switched import compiled_with, parse_options, time_interleaved

import torchcx
import torchcx._boundary.retrace as retrace
import torchcx._graph_passes as graph_passes
import torchcx._inductor_patches as patches
import torchcx.backend as backend
import torchcx.ops.linalg as linalg
from torchcx import _layout
from torchcx.bench.modes import JaxInstance, Skipped
from torchcx.bench.workloads import WORKLOADS


def _skinny_products_as_blocks(a: Any, b: Any, dtype: torch.dtype, *, compiled: bool | None = None) -> str:
    """Note [GEMM strategy rule] before 2026-12-07: a compiled skinny product (k <= 16, or one
    operand 8x smaller) of operands the graph computes took the block strategy."""
    chosen = _GEMM_STRATEGY(a, b, dtype, compiled=compiled)
    _, m, k, n = linalg.gemm_dims(a, b)
    small, large = sorted((a.numel(), b.numel()))
    packed = all(isinstance(x, torchcx.ComplexTensor) and _layout.remembered(x) is not None for x in (a, b))
    skinny = m != 1 and n != 1 and (8 * small <= large or k <= 16)
    return "block" if chosen == "native" and skinny and not packed else chosen


_GEMM_STRATEGY = linalg.gemm_strategy

#: mode -> the switches set while it compiles
MODES = {
    "torchcx": (),
    "full FFTs": ((torchcx.config, "truncated_spectra", False),),
    "ATen's copies": ((torchcx.ops.fft, "_mkl_copies", lambda x, dims: False),),
    "reshapes copied": ((patches, "_reshaped_extern_inputs_realized", contextlib.nullcontext),),
    "conjugates copied": ((retrace, "_unconjugated", lambda node, env: torch.conj_physical(env[node])),),
    "cat inputs gathered": ((patches, "_reshaped_cat_inputs_realized", contextlib.nullcontext),),
    "moves of halves": ((backend, "moves_on_words", lambda gm: 0),),
    "scaled before transforms": ((backend, "scalar_factors_after_transforms", lambda gm: 0),),
    "skinny products as blocks": ((linalg, "gemm_strategy", _skinny_products_as_blocks),),
    "padded by the transform": ((graph_passes, "_PAD_AS_CAT", False),),
    "merged dims gathered": ((patches, "_merged_dims_split", contextlib.nullcontext),),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", default="full")
    parser.add_argument("--modes", default=None, help="comma-separated torchcx modes besides 'torchcx' (default: all)")
    options = parse_options(parser, sample_s=0.1)  # (a 20 ms sample would be one call, after another mode's)
    problem = WORKLOADS["fno"].build(options.scale, torch.device("cpu"))
    modes: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {"eager": (problem.program, problem.make_args())}
    default = torch.compile(problem.program, dynamic=False)
    modes["torch.compile"] = (default, problem.make_args())
    default(*modes["torch.compile"][1])
    chosen = {"torchcx", *options.modes.split(",")} if options.modes else set(MODES)
    unknown = chosen - set(MODES)
    if unknown:
        parser.error(f"unknown modes: {sorted(unknown)}")
    for mode, switches in MODES.items():
        if mode not in chosen:
            continue
        args = problem.make_args()
        tag = "".join(c if c.isalnum() else "_" for c in mode)
        modes[mode] = (compiled_with(problem.program, args, tag, switches), args)
    try:
        jax = JaxInstance(problem, torch.device("cpu"))
        jax()
        modes["jax.jit"] = (jax, ())
    except Skipped as e:
        print(f"(jax.jit skipped: {e})")
    expected = problem.observe(modes["eager"][1], modes["eager"][0](*modes["eager"][1]))
    for mode in chosen:
        fn, args = modes[mode]
        for a, e in zip(problem.observe(args, fn(*args)), expected):
            torch.testing.assert_close(a, e, rtol=problem.tolerance, atol=problem.tolerance * e.abs().max().item())
    samples, faults = time_interleaved(modes, options.rounds)
    eager = statistics.median(samples["eager"])
    print(f"{problem.size}; {options.threads} thread(s), median (fastest) of {options.rounds} rounds")
    print("| mode | ms per call | vs eager | page faults per call |")
    print("| --- | ---: | ---: | ---: |")
    for mode, times in samples.items():
        ms = statistics.median(times)
        print(
            f"| {mode} | {ms * 1e3:.2f} ({min(times) * 1e3:.2f}) | {eager / ms:.2f}x "
            f"| {statistics.median(faults[mode]):.0f} |"
        )
    # paired: the torchcx modes' samples of one round ran next to each other
    for mode in MODES:
        if mode != "torchcx" and mode in chosen:
            ratios = [other / it for other, it in zip(samples[mode], samples["torchcx"])]
            print(f"{mode} / torchcx, per round: median {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
