"""A hash of Inductor's generated code for a fixed set of torchcx programs.

    python tools/codegen_fingerprint.py

Run it before and after a change that should not change what is compiled (a
restructuring): the same hashes mean the same kernels. Addresses and temporary paths
are removed from the code before hashing; the training step's gradient is printed too.
"""

from __future__ import annotations

import hashlib
import re
import warnings

import torch
from torch._inductor.utils import run_and_get_code

import torchcx


def _c(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.complex64)


def rope(x, f):
    return torch.view_as_real(torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2)) * f).flatten(-2)


def inplace(x, p):
    x.mul_(p)
    return x[:, ::2]


def aliased(a):
    t = a.exp()
    return t, t[1:]


def fft(x):
    return torch.fft.ifft(torch.fft.fft(x) * 2)


def gemm(a, b):
    return (a @ b).sin()


def conj_input(a):
    return a * 3


def eigvalsh(a):
    return torch.linalg.eigvalsh(a + a.mH)


def train(w, x):
    return (torch.fft.fft(x @ w).abs() ** 2).sum()


PROGRAMS = {
    "rope": (rope, lambda: (torch.randn(2, 8, 16), torch.polar(torch.ones(8, 8), torch.randn(8, 8)))),
    "inplace": (inplace, lambda: (_c(8, 8), _c(8, 8))),
    "aliased": (aliased, lambda: (_c(8),)),
    "fft": (fft, lambda: (_c(4, 64),)),
    "gemm": (gemm, lambda: (_c(16, 16), _c(16, 16))),
    "conj_input": (conj_input, lambda: (_c(8).conj(),)),
    "eigvalsh": (eigvalsh, lambda: (_c(4, 4),)),
}


def _fingerprint(code: list[str]) -> str:
    lines = (line for line in "\n".join(code).splitlines() if "/tmp/" not in line and "torchinductor" not in line)
    text = re.sub(r" [0-9a-f]{12}$", "", "\n".join(lines), flags=re.M)  # constants' addresses
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def main() -> None:
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    with torch._inductor.config.patch(force_disable_caches=True):
        for name, (fn, make) in PROGRAMS.items():
            torch._dynamo.reset()
            _, code = run_and_get_code(torchcx.compile(fn), *make())
            print(f"{name}: {_fingerprint(code)}")
        torch._dynamo.reset()
        w, x = _c(8, 8).requires_grad_(), _c(4, 8)
        _, code = run_and_get_code(lambda: torchcx.compile(train)(w, x).backward())
        print(f"train: {_fingerprint(code)} (gradient sum {w.grad.abs().sum().item():.6f})")


if __name__ == "__main__":
    main()
