"""A Fourier neural operator trained on 2 processes (FSDP2 or DDP) with bfloat16-part complex weights.

    torchrun --standalone --nproc_per_node 2 examples/distributed_fno.py [--engine fsdp|ddp]
        [--parts bfloat16|float16|float32|complex64|mixed] [--small]

(Run without torchrun, it launches itself that way.) The model is a 1D FNO:
complex signals of ``width`` channels, each layer an FFT, a learnt complex
weight on the lowest ``modes`` modes (``einsum``), an inverse FFT, a complex
pointwise layer and a gated nonlinearity. Its complex weights are
``torchcx.ComplexTensor`` parameters with the parts of ``--parts``
(``complex64``: native complex64 parameters; ``mixed``: float32-part master
weights that FSDP2's ``MixedPrecisionPolicy(param_dtype=torch.bfloat16)``
all-gathers and computes in bfloat16 parts). Forward and backward are compiled
with ``torchcx.compile``; the collectives run on the real parts, so bfloat16
parts send half of complex64's bytes.

Each rank trains on its half of every batch. Rank 0 then trains the same
model in one process on both halves, summing their gradients as the
collective does, and checks:

* the loss falls;
* the parameters equal the two-process run's (the same roundings in the
  same order: exact, bfloat16 included; float16 within one ulp, since
  halving a gradient below its normal range rounds);
* the bytes sent per step are what the part dtype implies (bfloat16 and
  float16 parts: half of complex64's).

It prints the time per step on 2 processes and on 1 (the reference, one
thread like each torchrun worker), the bytes sent per step and the peak
memory of a step. docs/distributed.md reports the figures.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

import torchcx
import torchcx.distributed
from torchcx.bench.memory import peak_memory

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import Checks, parser  # noqa: E402

#: --parts: (the parameters' part dtype, None for native complex64; the compute part dtype)
PARTS: dict[str, tuple[torch.dtype | None, torch.dtype | None]] = {
    "complex64": (None, None),
    "float32": (torch.float32, torch.float32),
    "bfloat16": (torch.bfloat16, torch.bfloat16),
    "float16": (torch.float16, torch.float16),
    "mixed": (torch.float32, torch.bfloat16),
}


class SpectralLayer(nn.Module):
    """One FNO layer on complex signals: a learnt filter on the lowest modes, a pointwise layer, a gate."""

    def __init__(self, width: int, modes: int, part: torch.dtype | None, g: torch.Generator) -> None:
        super().__init__()
        self.modes = modes
        self.weight = _parameter((width, width, modes), width, part, g)
        self.pointwise = _parameter((width, width), width, part, g)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        n = h.shape[-1]
        spectrum = torch.fft.fft(h)[..., : self.modes]
        filtered = torch.einsum("bim,iom->bom", spectrum, self.weight)
        spectral = torch.fft.ifft(nn.functional.pad(filtered, (0, n - self.modes)))
        z = spectral + torch.einsum("bin,io->bon", h, self.pointwise)
        return z * torch.sigmoid(z.abs())


class FNO(nn.Module):
    def __init__(self, width: int, modes: int, layers: int, part: torch.dtype | None, seed: int = 0) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.layers = nn.ModuleList(SpectralLayer(width, modes, part, g) for _ in range(layers))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            h = layer(h)
        return h


def _parameter(shape: tuple[int, ...], fan_in: int, part: torch.dtype | None, g: torch.Generator) -> nn.Parameter:
    w = torch.randn(*shape, dtype=torch.complex64, generator=g) / fan_in**0.5
    return nn.Parameter(torchcx.as_complex_tensor(w, part) if part is not None else w)


def loss_fn(model: Any, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    d = model(x) - y
    return (d.abs() ** 2).float().mean()  # the loss in float32


def make_data(size: dict[str, int], compute: torch.dtype | None, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Batch ``step``: random complex signals and what a fixed random (teacher) FNO makes of them."""
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(size["batch"], size["width"], size["n"], dtype=torch.complex64, generator=g)
    with torch.no_grad():
        y = _teacher(size)(x)
    if compute is not None:
        x, y = torchcx.as_complex_tensor(x, compute), torchcx.as_complex_tensor(y, compute)
    return x, y


_TEACHERS: dict[tuple[int, ...], FNO] = {}


def _teacher(size: dict[str, int]) -> FNO:
    key = (size["width"], size["modes"], size["layers"])
    if key not in _TEACHERS:
        _TEACHERS[key] = FNO(size["width"], size["modes"], size["layers"], None, seed=7)
    return _TEACHERS[key]


def optimizer(model: nn.Module, part: torch.dtype | None) -> torch.optim.Optimizer:
    # Adam's default eps (1e-8) is 0 in float16
    return torch.optim.Adam(model.parameters(), lr=3e-3, eps=1e-3 if part == torch.float16 else 1e-8)


def _wrap(model: nn.Module, engine: str, parts: str) -> nn.Module:
    if engine == "ddp":
        # bfloat16 parts need DDP's Python reducer: the C++ one allocates gradient buckets from
        # the reported dtype, complex32, whose parts are float16 (docs/distributed.md)
        mode = "python_reducer" if parts in ("bfloat16", "mixed") else "ddp_optimizer"
        with torch._dynamo.config.patch(optimize_ddp=mode):
            return nn.parallel.DistributedDataParallel(model)
    kwargs: dict[str, Any] = {}
    if parts == "mixed":
        from torch.distributed.fsdp import MixedPrecisionPolicy

        kwargs["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16)
    for layer in model.layers:
        torchcx.distributed.fully_shard(layer, **kwargs)
    return torchcx.distributed.fully_shard(model, **kwargs)


def _compile_layers(model: FNO) -> FNO:
    """Compile each layer with torchcx, in place.

    Per layer, in both runs: FSDP2's per-layer hooks split the graph at layer
    boundaries, and the same split in one process keeps the roundings the same
    (a fused kernel keeps an intermediate unrounded; Inductor fuses across a
    layer boundary only inside one graph).
    """
    for layer in model.layers:
        layer.compile(backend="torchcx")
    return model


def _full(t: torch.Tensor) -> torch.Tensor:
    return (t.full_tensor() if hasattr(t, "full_tensor") else t).detach().clone()


def _values(t: torch.Tensor) -> torch.Tensor:
    if isinstance(t, torchcx.ComplexTensor):
        return torch.stack([t.re.double(), t.im.double()], dim=-1)
    return torch.view_as_real(t).double()


def _timed_steps(step_fn: Any, steps: int) -> tuple[list[float], list[float]]:
    losses, seconds = [], []
    for i in range(steps):
        start = time.perf_counter()
        losses.append(step_fn(i))
        seconds.append(time.perf_counter() - start)
    return losses, seconds


def distributed_run(size: dict[str, int], engine: str, parts: str) -> dict[str, Any]:
    rank, world = dist.get_rank(), dist.get_world_size()
    part, compute = PARTS[parts]
    model = FNO(size["width"], size["modes"], size["layers"], part)
    step_model = _wrap(model, engine, parts)
    _compile_layers(model)
    opt = optimizer(model, compute)
    half = size["batch"] // world

    def train_step(i: int) -> float:
        x, y = make_data(size, compute, i)
        opt.zero_grad()
        loss = loss_fn(step_model, x[rank * half : (rank + 1) * half], y[rank * half : (rank + 1) * half])
        loss.backward()
        opt.step()
        return loss.item()

    losses, seconds = _timed_steps(train_step, size["steps"])
    state = {k: _full(v) for k, v in model.state_dict().items()}

    # Bytes: one eager step of a fresh copy (the counter sees eager collectives; a compiled
    # step sends the same, since DDP's and FSDP2's collectives run in their hooks).
    probe = _wrap(FNO(size["width"], size["modes"], size["layers"], part), engine, parts)
    x, y = make_data(size, compute, 0)
    with torchcx.distributed.CollectiveBytes() as sent:
        loss_fn(probe, x[rank * half : (rank + 1) * half], y[rank * half : (rank + 1) * half]).backward()
    memory = peak_memory(lambda: train_step(0), ())
    return {"losses": losses, "seconds": seconds, "state": state, "bytes": sent.bytes, "memory": memory}


def single_run(size: dict[str, int], parts: str) -> dict[str, Any]:
    """One process, both halves of each batch, gradients summed as the collective sums them."""
    part, compute = PARTS[parts]
    torch._dynamo.reset()
    world, half = 2, size["batch"] // 2
    if parts == "mixed":  # float32 masters, stepped with the bfloat16 copies' gradients
        master = FNO(size["width"], size["modes"], size["layers"], part)
        model = FNO(size["width"], size["modes"], size["layers"], compute)
    else:
        master = model = FNO(size["width"], size["modes"], size["layers"], part)
    step_model = _compile_layers(model)
    opt = optimizer(master, compute)

    def train_step(i: int) -> float:
        x, y = make_data(size, compute, i)
        opt.zero_grad()
        model.zero_grad()
        if master is not model:
            with torch.no_grad():
                for p, q in zip(model.parameters(), master.parameters()):
                    p.copy_(q.with_component_dtype(compute))
        total = 0.0
        for r in range(world):
            loss = loss_fn(step_model, x[r * half : (r + 1) * half], y[r * half : (r + 1) * half]) / world
            loss.backward()
            total += loss.item()
        if master is not model:
            for p, q in zip(model.parameters(), master.parameters()):
                q.grad = p.grad.with_component_dtype(part)
        opt.step()
        return total

    losses, seconds = _timed_steps(train_step, size["steps"])
    return {"losses": losses, "seconds": seconds, "state": {k: v.detach() for k, v in master.state_dict().items()}}


def expected_bytes(size: dict[str, int], engine: str, parts: str, world: int) -> int:
    """Bytes one rank sends in a step: per complex weight element, its parts' bytes times the
    collectives' passes (DDP: one all-reduce of the gradients; FSDP2: an all-gather of the
    parameter shards in forward and in backward (layers reshard after forward, the root does
    not) and a reduce-scatter of the gradients)."""
    elements_per_layer = size["width"] ** 2 * (size["modes"] + 1)
    elements = size["layers"] * elements_per_layer
    _, compute = PARTS[parts]
    element_bytes = 8 if compute is None else 2 * torch.finfo(compute).bits // 8
    if engine == "ddp":
        return elements * element_bytes
    gathers = (2 * elements if size["layers"] > 0 else 0) // world
    return (gathers + elements) * element_bytes


def worker(args: Any) -> dict[str, Any]:
    size = SIZES["small" if args.small else "full"]
    torch.manual_seed(0)
    dist.init_process_group("gloo")
    try:
        result = distributed_run(size, args.engine, args.parts)
    finally:
        dist.destroy_process_group()
    if int(os.environ["RANK"]) != 0:
        return {}
    reference = single_run(size, args.parts)
    checks = Checks()
    losses = result["losses"]
    checks.below("final loss / first loss", losses[-1] / losses[0], 0.9)
    part, compute = PARTS[args.parts]
    worst = 0.0
    for key, want in reference["state"].items():
        got = result["state"][key]
        worst = max(worst, (_values(got) - _values(want)).abs().max().item())
    if compute == torch.float16:  # one float16 ulp of the largest parameter
        bound = 2.0**-10 * max(_values(v).abs().max().item() for v in reference["state"].values())
        checks.below("parameters: max difference from 1 process", worst, bound * (1 + 1e-9))
    else:  # equal: any difference fails
        checks.below("parameters: max difference from 1 process", worst, 1e-300)
    want_bytes = expected_bytes(size, args.engine, args.parts, 2)
    checks.below(
        f"bytes sent per step ({result['bytes']}) - expected ({want_bytes})", abs(result["bytes"] - want_bytes), 1
    )

    def per_step(seconds: list[float]) -> float:
        return statistics.median(seconds[2:])  # after the compiling steps

    two, one = per_step(result["seconds"]), per_step(reference["seconds"])
    print(f"{args.engine}, parts {args.parts}, size {size}")
    print(f"  time per step: 2 processes {1e3 * two:.1f} ms, 1 process {1e3 * one:.1f} ms ({one / two:.2f}x)")
    print(f"  bytes sent per step per rank: {result['bytes']}")
    print(f"  peak memory of a step (rank 0): {result['memory']['peak_bytes'] / 2**20:.2f} MiB")
    checks.finish()
    return {
        "ms_per_step_2": 1e3 * two,
        "ms_per_step_1": 1e3 * one,
        "bytes_per_step": result["bytes"],
        "peak_bytes": result["memory"]["peak_bytes"],
    }


SIZES: dict[str, dict[str, int]] = {
    "small": {"width": 8, "modes": 8, "n": 64, "layers": 2, "batch": 8, "steps": 6},
    "full": {"width": 32, "modes": 16, "n": 256, "layers": 4, "batch": 16, "steps": 20},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--engine", choices=["fsdp", "ddp"], default="fsdp")
    p.add_argument("--parts", choices=list(PARTS), default="bfloat16")
    args = p.parse_args(argv)
    if args.parts == "mixed" and args.engine != "fsdp":
        p.error("--parts mixed is FSDP2's MixedPrecisionPolicy: use --engine fsdp")
    if "RANK" in os.environ:
        return worker(args)
    # Not under torchrun: launch 2 processes of this script with it (on 127.0.0.1, a free port).
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"]
    command += ["--master_addr", "127.0.0.1", "--master_port", str(_free_port()), __file__, *(argv or sys.argv[1:])]
    code = subprocess.call(command)
    if code:
        raise SystemExit(code)
    return {}


if __name__ == "__main__":
    main()
