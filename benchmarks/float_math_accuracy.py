"""The accuracy of Note [Float math in registers] (src/torchcx/_kernel_batches.py) as the
compiled kernels compute it: the sine and cosine of float vectors below 125 without a call,
and the float hypot corrected in float.

    python benchmarks/float_math_accuracy.py [--hypot-pairs 24]

Compiles ``torch.polar(1, t)`` and ``z.abs()`` with torchcx and compares them, and eager's,
with float64: the sine and cosine of every float from 0 to 125 (past which the helper calls
Sleef), of 2^24 random floats of either sign below 125, and of floats within 1e-4 of
multiples of pi/2 (where the reduction cancels); the hypot of 2^k random pairs over the whole
float range and of pairs whose squares nearly tie. Errors in ULP of the float nearest the
exact value. About three minutes on one core; timings: ``benchmarks/float_math.py``.
"""

from __future__ import annotations

import argparse
import math

import torch

import torchcx


def ulps(got: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """|got - exact| in ULP of the float nearest ``exact`` (float64), 0 where both are equal or
    where ``exact`` overflows float and ``got`` is infinite."""
    nearest = exact.float()
    ulp = (torch.nextafter(nearest.abs(), torch.tensor(math.inf)) - nearest.abs()).double()
    error = torch.where(got.double() == exact, 0.0, (got.double() - exact).abs() / ulp)
    return torch.where(nearest.isinf() & (got == nearest), 0.0, error)


def _worst(label: str, t: torch.Tensor, compiled: tuple[torch.Tensor, ...], eager: tuple[torch.Tensor, ...]) -> None:
    exact = (torch.sin(t.double()), torch.cos(t.double()))
    for fn, c, e, x in zip(("sin", "cos"), compiled, eager, exact):
        mine, theirs = ulps(c, x), ulps(e, x)
        at = t[mine.argmax()].item()
        print(f"{label:28s} {fn}: torchcx {mine.max().item():.3f} ULP (at {at!r}), eager {theirs.max().item():.3f} ULP")


def accuracy(hypot_pairs: int) -> None:
    polar = torchcx.compile(lambda t: torch.polar(torch.ones_like(t), t), dynamic=False)
    chunk = 1 << 24
    top = torch.tensor(125.0).view(torch.int32).item()
    worst = {"sin": (0.0, 0.0), "cos": (0.0, 0.0)}
    for start in range(0, top, chunk):  # every float in [0, 125)
        t = torch.arange(start, min(start + chunk, top), dtype=torch.int32).view(torch.float32)
        if t.numel() < chunk:
            t = torch.cat([t, t.new_zeros(chunk - t.numel())])
        z = polar(t)
        for fn, got, exact in (("sin", z.imag, torch.sin(t.double())), ("cos", z.real, torch.cos(t.double()))):
            e = ulps(got, exact)
            if e.max().item() > worst[fn][0]:
                worst[fn] = (e.max().item(), t[e.argmax()].item())
    for fn, (e, at) in worst.items():
        print(f"{'every float in [0, 125)':28s} {fn}: torchcx {e:.3f} ULP (at {at!r})")
    g = torch.Generator().manual_seed(0)
    t = (torch.rand(chunk, generator=g) * 250 - 125).float()
    z = polar(t)
    _worst("2^24 random in (-125, 125)", t, (z.imag, z.real), (torch.sin(t), torch.cos(t)))
    q = torch.randint(-79, 80, (chunk,), generator=g).double()
    t = (q * (math.pi / 2) + (torch.rand(chunk, generator=g, dtype=torch.float64) - 0.5) * 2e-4).float()
    z = polar(t)
    _worst("near multiples of pi/2", t, (z.imag, z.real), (torch.sin(t), torch.cos(t)))

    modulus = torchcx.compile(torch.abs, dynamic=False)
    n = 1 << hypot_pairs
    bits = torch.randint(0, 0x7F800000, (2, n), generator=g, dtype=torch.int32)  # every finite magnitude
    signs = torch.randint(0, 2, (2, n), generator=g, dtype=torch.int32) << 31
    wide = (bits | signs).view(torch.float32)
    a = torch.rand(n, generator=g) + 0.5
    near = torch.stack([a, (a * (1 + (torch.rand(n, generator=g) - 0.5) * 1e-3)).float()])  # squares nearly tie
    for label, (re, im) in (("hypot, every magnitude", wide), ("hypot, nearly equal parts", near)):
        got, eager = modulus(torch.complex(re, im)), torch.complex(re, im).abs()
        exact = torch.hypot(re.double(), im.double())
        print(
            f"{label:28s} torchcx {ulps(got, exact).max().item():.4f} ULP, "
            f"eager {ulps(eager, exact).max().item():.4f} ULP, "
            f"torchcx != the exact value rounded once: {int((got != exact.float()).sum())} of {n}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hypot-pairs", type=int, default=24, help="exponent: 2^k random pairs for the hypot")
    options = parser.parse_args()
    torch.set_num_threads(1)
    torch._inductor.config.force_disable_caches = True
    accuracy(options.hypot_pairs)


if __name__ == "__main__":
    main()
