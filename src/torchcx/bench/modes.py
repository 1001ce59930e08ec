"""The ways a workload is run: eager, torch.compile, torchcx, PyTorch's in-tree complex wrapper, JAX.

Every mode turns a ``Problem`` into an ``Instance``: a zero-argument callable
running one call of the program on the mode's own arguments and waiting for
its results (so that a timer around it measures the work, on any device), and
a way to read the values compared against eager as float64 tensors.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from .workloads import Problem

EAGER = "eager"
TORCH_COMPILE = "torch.compile"
TORCHCX = "torchcx"
WRAPPER = "in-tree wrapper"
JAX = "jax.jit"
#: torchcx with subnormals flushed to zero (``torchcx.config.flush_subnormals``), as XLA
#: does on CPU: an opt-in semantics, so it is not in the default modes.
TORCHCX_FLUSH = "torchcx+flush"

#: Every mode, in the order of the table.
MODES = (EAGER, TORCH_COMPILE, TORCHCX, TORCHCX_FLUSH, WRAPPER, JAX)
#: The modes a run times unless told otherwise.
DEFAULT_MODES = (EAGER, TORCH_COMPILE, TORCHCX, WRAPPER, JAX)
#: Modes whose first calls compile.
COMPILED = (TORCH_COMPILE, TORCHCX, TORCHCX_FLUSH, WRAPPER, JAX)


class Skipped(Exception):
    """A mode that cannot run here (JAX not installed, no JAX backend for the device)."""


def as_float64(value: Any) -> Tensor:
    """``value`` (a tensor, or a JAX or NumPy array) as a float64 CPU tensor; complex as a trailing (re, im) pair.

    Errors are computed in torch so that the suite needs NumPy only with JAX.
    """
    if not isinstance(value, Tensor):
        import numpy as np

        value = torch.from_numpy(np.array(value, dtype=np.complex128 if np.iscomplexobj(value) else np.float64))
    value = value.detach().cpu()
    if value.is_complex():
        value = torch.view_as_real(value.resolve_conj())
    return value.to(torch.float64)


def synchronize(device: torch.device) -> None:
    if device.type != "cpu":
        getattr(torch, device.type).synchronize()


class Instance:
    """One mode's running copy of a problem."""

    def __call__(self) -> Any:
        raise NotImplementedError

    def observe(self, out: Any) -> list[Tensor]:
        raise NotImplementedError


class TorchInstance(Instance):
    def __init__(self, fn: Callable[..., Any], problem: Problem, device: torch.device) -> None:
        self.fn = fn
        self.problem = problem
        self.device = device
        self.args = problem.make_args()

    def __call__(self) -> Any:
        out = self.fn(*self.args)
        synchronize(self.device)
        return out

    def observe(self, out: Any) -> list[Tensor]:
        return [as_float64(t) for t in self.problem.observe(self.args, out)]


class FlushingInstance(TorchInstance):
    """A TorchInstance whose calls run with subnormals flushed to zero."""

    def __call__(self) -> Any:
        import torchcx

        with torchcx.config.flush_subnormals():
            return super().__call__()


class JaxInstance(Instance):
    def __init__(self, problem: Problem, device: torch.device) -> None:
        jax = import_jax()
        if problem.jax is None:
            raise Skipped("this workload has no JAX version")
        platform = {"cpu": "cpu", "cuda": "gpu"}.get(device.type, device.type)
        try:
            jax_device = jax.devices(platform)[0]
        except RuntimeError as e:
            raise Skipped(f"JAX has no {platform} backend here ({e})") from e
        self.jax = jax
        self.case = problem.jax(problem.make_args())
        self.fn = jax.jit(self.case.fn)
        self.args = jax.device_put(self.case.args, jax_device)

    def __call__(self) -> Any:
        out = self.fn(*self.args)
        self.jax.block_until_ready(out)
        if self.case.advance is not None:
            self.args = self.case.advance(self.args, out)
        return out

    def observe(self, out: Any) -> list[Tensor]:
        return [as_float64(x) for x in self.case.observe(out)]


@functools.cache
def import_jax() -> Any:
    try:
        import jax
    except ImportError as e:
        raise Skipped("JAX is not installed (pip install 'torchcx[bench]')") from e
    # The same float32 programs as torch's: no x64 even if the environment asks
    # for it, and full float32 matrix products (JAX's default on GPUs is
    # TF32-like, torch's is float32; measured 3e-2 error on the MLP step).
    jax.config.update("jax_enable_x64", False)
    jax.config.update("jax_default_matmul_precision", "highest")
    return jax


def jax_version() -> str | None:
    try:
        return import_jax().__version__
    except Skipped:
        return None


def inductor_with_complex_wrapper(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    """Inductor with ``torch._functorch.config.enable_complex_wrapper`` on while it compiles.

    A backend of its own, not the config flipped around ``torch.compile``:
    Dynamo caches compiled code per backend, so this mode cannot reuse the
    graphs ``torch.compile`` default compiled for the same function.
    """
    from torch._inductor.compile_fx import compile_fx

    with torch._functorch.config.patch(enable_complex_wrapper=True):
        return compile_fx(gm, example_inputs)


def start(mode: str, problem: Problem, device: torch.device) -> Instance:
    """An instance of ``problem`` in ``mode`` (compiled lazily, on its first call)."""
    if mode == EAGER:
        return TorchInstance(problem.program, problem, device)
    if mode == TORCH_COMPILE:
        return TorchInstance(torch.compile(problem.program), problem, device)
    if mode == TORCHCX:
        import torchcx

        return TorchInstance(torchcx.compile(problem.program), problem, device)
    if mode == TORCHCX_FLUSH:
        import torchcx

        return FlushingInstance(torchcx.compile(problem.program), problem, device)
    if mode == WRAPPER:
        return TorchInstance(torch.compile(problem.program, backend=inductor_with_complex_wrapper), problem, device)
    if mode == JAX:
        return JaxInstance(problem, device)
    raise ValueError(f"unknown mode {mode!r}; the modes are {', '.join(MODES)}")
