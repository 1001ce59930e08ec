"""Small FFT pipelines, as audio and imaging code writes them (issue 15's STFT and operator-pair rows).

    python benchmarks/fft_pipelines.py [--threads 1] [--rounds 15]

* **stft-stretch**: ``torch.stft`` -> a phase-vocoder time stretch (the algorithm
  torchaudio's ``phase_vocoder`` implements: magnitudes interpolated between
  frames, phase advances accumulated with ``cumsum``) -> ``torch.istft``. Hann
  window, n_fft 512, hop 128, stretch rate 1.25; batch x samples of 16 kHz audio
  at three sizes (1 x 4000, 2 x 16000, 8 x 48000).
* **sense-normal**: the normal operator A^H A of multi-coil MRI (examples/mri_sense.py):
  per coil, ``mask * fft2(coil * x)`` and back with ``ifft2``, summed with the
  conjugate coil maps; 8 coils at 64², 128² (issue 15's size) and 256².

Each program is timed eager, with ``torch.compile`` (default Inductor) and with
``torchcx.compile``, one thread, modes interleaved round by round in one process;
the median of each mode's rounds is reported with the ratio eager / torchcx and
torch.compile / torchcx. Results also go to benchmarks/results/fft_pipelines_cpu.json.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

import torchcx

N_FFT, HOP, RATE = 512, 128, 1.25


def phase_vocoder(spec: Tensor, rate: float, phase_advance: Tensor) -> Tensor:
    """Time-stretch a (..., freq, frames) complex spectrogram by ``rate`` without changing pitch."""
    steps = torch.arange(0, spec.size(-1), rate, device=spec.device, dtype=torch.float32)
    alphas = steps % 1.0
    first_phase = spec[..., :1].angle()
    padded = torch.nn.functional.pad(spec, [0, 2])
    left = padded.index_select(-1, steps.long())
    right = padded.index_select(-1, (steps + 1).long())
    # The phase advance between neighbouring frames, less the bin's expected advance,
    # wrapped to [-pi, pi], then accumulated along time.
    delta = right.angle() - left.angle() - phase_advance
    delta = delta - 2 * math.pi * torch.round(delta / (2 * math.pi)) + phase_advance
    phase = torch.cumsum(torch.cat([first_phase, delta[..., :-1]], dim=-1), -1)
    magnitude = alphas * right.abs() + (1 - alphas) * left.abs()
    return torch.polar(magnitude, phase)


def stft_stretch(wave: Tensor, window: Tensor, phase_advance: Tensor) -> Tensor:
    spec = torch.stft(wave, N_FFT, HOP, window=window, return_complex=True)
    stretched = phase_vocoder(spec, RATE, phase_advance)
    return torch.istft(stretched, N_FFT, HOP, window=window)


def sense_normal(x: Tensor, coils: Tensor, mask: Tensor) -> Tensor:
    """A^H A x for A x = (mask * F(coil_c * x))_c, F the orthonormal 2-D FFT."""
    k = mask * torch.fft.fft2(coils * x, norm="ortho")
    return (coils.conj() * torch.fft.ifft2(mask * k, norm="ortho")).sum(0)


def stft_case(batch: int, samples: int) -> tuple[str, Callable[..., Any], tuple[Tensor, ...]]:
    g = torch.Generator().manual_seed(0)
    wave = torch.randn(batch, samples, generator=g)
    window = torch.hann_window(N_FFT)
    phase_advance = torch.linspace(0, math.pi * HOP, N_FFT // 2 + 1)[..., None]
    return f"stft-stretch {batch}x{samples}", stft_stretch, (wave, window, phase_advance)


def sense_case(n: int, coils: int = 8) -> tuple[str, Callable[..., Any], tuple[Tensor, ...]]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, n, dtype=torch.complex64, generator=g)
    maps = torch.randn(coils, n, n, dtype=torch.complex64, generator=g)
    mask = (torch.rand(n, 1, generator=g) < 0.4).to(torch.complex64).expand(n, n).contiguous()
    return f"sense-normal {coils}x{n}x{n}", sense_normal, (x, maps, mask)


CASES = [
    lambda: stft_case(1, 4000),
    lambda: stft_case(2, 16000),
    lambda: stft_case(8, 48000),
    lambda: sense_case(64),
    lambda: sense_case(128),
    lambda: sense_case(256),
]


def _time_ms(fn: Callable[..., Any], args: tuple[Tensor, ...], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - start) / calls * 1e3


def run_case(make: Callable[[], tuple[str, Callable[..., Any], tuple[Tensor, ...]]], rounds: int) -> dict[str, Any]:
    name, program, args = make()
    torch._dynamo.reset()
    modes = {"eager": program, "torch.compile": torch.compile(program), "torchcx": torchcx.compile(program)}
    expected = program(*args)
    compile_s = {}
    for mode, fn in modes.items():
        start = time.perf_counter()
        result = fn(*args)
        compile_s[mode] = time.perf_counter() - start
        torch.testing.assert_close(result, expected, rtol=1e-4, atol=1e-4)
    # Calls per sample: about 20 ms of eager work, at least one call.
    eager_ms = _time_ms(program, args, 3)
    calls = max(1, int(20 / max(eager_ms, 1e-3)))
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(rounds):
        for mode, fn in modes.items():
            samples[mode].append(_time_ms(fn, args, calls))
    ms = {mode: statistics.median(s) for mode, s in samples.items()}
    return {
        "case": name,
        "ms": ms,
        "eager/torchcx": ms["eager"] / ms["torchcx"],
        "torch.compile/torchcx": ms["torch.compile"] / ms["torchcx"],
        "first_call_s": compile_s,
        "calls_per_sample": calls,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "fft_pipelines_cpu.json")
    options = parser.parse_args()
    torch.set_num_threads(options.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {options.rounds} rounds, modes interleaved")
    print(f"{'case':28} {'eager ms':>9} {'compile ms':>11} {'torchcx ms':>11} {'vs eager':>9} {'vs compile':>11}")
    results = []
    for make in CASES:
        r = run_case(make, options.rounds)
        results.append(r)
        ms = r["ms"]
        print(
            f"{r['case']:28} {ms['eager']:9.3f} {ms['torch.compile']:11.3f} {ms['torchcx']:11.3f} "
            f"{r['eager/torchcx']:8.2f}x {r['torch.compile/torchcx']:10.2f}x",
            flush=True,
        )
    worst = min(results, key=lambda r: r["eager/torchcx"])
    print(f"worst torchcx vs eager: {worst['eager/torchcx']:.2f}x ({worst['case']})")
    meta = {"torch": torch.__version__, "threads": options.threads, "rounds": options.rounds}
    options.out.write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
