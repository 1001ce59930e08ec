"""What a workload is: an idiomatic torch program, its JAX twin, its sizes and its cost model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from torch.utils._pytree import tree_leaves

#: The sizes every workload defines. "smoke" is for the test suite (seconds, no
#: meaningful timing), "quick" for ``--quick``, "full" for the published table.
SCALES = ("smoke", "quick", "full")


def tensors_of(value: Any) -> list[Tensor]:
    """The tensors in a (nested) program output, in order."""
    return [x for x in tree_leaves(value) if isinstance(x, Tensor)]


def default_observe(args: tuple[Any, ...], out: Any) -> list[Tensor]:
    return tensors_of(out)


def leaves_of(value: Any) -> list[Any]:
    """The arrays in a (nested) JAX output, in order."""
    import jax

    return list(jax.tree_util.tree_leaves(value))


def to_numpy(t: Tensor) -> Any:
    """A host NumPy copy of ``t`` for the JAX twin (bfloat16 as JAX's bfloat16)."""
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        import jax.numpy as jnp

        return t.float().numpy().astype(jnp.bfloat16)
    return t.numpy().copy()


@dataclass
class JaxCase:
    """The same program written with jax.numpy, ready for ``jax.jit``.

    ``args`` are host arrays made from the very tensors the torch modes get; the
    runner puts them on the JAX device. A stateful program (a training step)
    returns its new state, and ``advance`` makes the next call's arguments from
    the previous call's arguments and output, as a JAX training loop would.
    """

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    observe: Callable[[Any], list[Any]] = leaves_of
    advance: Callable[[tuple[Any, ...], Any], tuple[Any, ...]] | None = None


@dataclass
class Problem:
    """One workload at one size, ready to run in every mode.

    ``make_args`` returns fresh arguments for one mode (a stateful program gets
    its own copy of the model and optimizer, all equal at the start), so modes
    do not disturb each other and the first calls of all modes start from the
    same state. ``observe`` picks the values compared against eager from one
    call's arguments and output (a training step: its loss and the updated
    parameters).

    ``bytes`` and ``flops`` are the compulsory cost of one call: the memory
    traffic no implementation can avoid (inputs read once, results written
    once, plus what a vendor FFT must read and write) and the real
    floating-point operations of its products. With the machine's copy
    bandwidth and GEMM rate they bound the time from below (a roofline).
    """

    program: Callable[..., Any]
    make_args: Callable[[], tuple[Any, ...]]
    size: str
    bytes: float
    flops: float
    tolerance: float
    observe: Callable[[tuple[Any, ...], Any], list[Tensor]] = default_observe
    jax: Callable[[tuple[Any, ...]], JaxCase] | None = None
    note: str = ""


@dataclass(frozen=True)
class Workload:
    """A named program and how to build it at each scale of ``SCALES`` on a device."""

    name: str
    title: str
    build: Callable[[str, torch.device], Problem]


@dataclass(frozen=True)
class SweepWorkload:
    """A named program built at ``n`` elements (a power of two, at least ``2**min_log2``), for the size sweep.

    ``n`` counts the elements of the program's main operand (the workload's
    docstring says which); the shapes around it are chosen so that any power of
    two from ``2**min_log2`` up is exact.
    """

    name: str
    title: str
    build: Callable[[int, torch.device], Problem]
    min_log2: int = 4


def log2_exact(n: int) -> int:
    """``log2(n)`` for a power of two ``n``; a ValueError otherwise."""
    if n < 1 or n & (n - 1):
        raise ValueError(f"the sweep's sizes are powers of two, not {n}")
    return n.bit_length() - 1
