"""Distributed training with complex parameters: DDP, FSDP2, tensor parallelism, checkpoints.

Two processes on gloo (127.0.0.1, a free port) run every scenario once, in one
spawn (``distributed_runs``), and rank 0 saves the parameters after
``STEPS`` optimizer steps; each test compares them with one process trained
on the same data, in the same part dtype, compiled with torchcx the same way.

Tolerances, from how the two runs round:

* DDP and FSDP: each rank computes the gradient of its half of the batch,
  and the collective sums the two halves (then divides by 2, exact). The
  single-process reference computes exactly that: the gradients of
  ``loss(half) / 2`` for both halves, accumulated into ``.grad`` (one rounded
  addition, as the collective's sum; halving is exact in binary floating
  point). The same operations round the same way in every part dtype,
  bfloat16 included, so parameters must be *equal* after Adam's steps.
  Except in float16: halving a gradient below float16's normal range
  (6.1e-5) rounds, and the two runs halve at different points (the
  reference its loss, DDP and FSDP the summed gradient); Adam turns such a
  difference into at most a rounding of a parameter: one float16 ulp.
* FSDP2 mixed precision (float32-part master weights, ``MixedPrecisionPolicy(
  param_dtype=torch.bfloat16)``): the reference computes with bfloat16 copies
  of the masters and steps the masters with the summed bfloat16 gradients,
  converted to float32 (exact): equal.
* Tensor parallelism splits each matrix product into two partial products,
  rounded on each rank and summed by an all-reduce, where one process rounds
  the full product once: different rounding. In complex64 that is float32
  reassociation, a few ulps (rtol 1e-6 after three steps). In bfloat16 parts
  the partial products differ from the whole by about one rounding (u = 2^-8
  relative); SGD (lr 0.1) moves the parameters by lr x gradient, so the
  parameters differ by at most a rounding of the update: one bfloat16 ulp of
  the largest parameter (Adam would normalize a tiny gradient difference
  into a full ``lr`` step, hence SGD here).
* Checkpoints: training resumed from a torch.distributed.checkpoint save
  equals uninterrupted training (equal: the same operations on the same
  values).

DDP with bfloat16 parts uses DDP's Python reducer (``optimize_ddp =
"python_reducer"``): the C++ reducer allocates its buckets from the
reported dtype, ``complex32``, whose parts are float16, and all-reduces them
as float16, so torchcx refuses its copy of a bfloat16 gradient into a bucket
(``test_ddp_cpp_reducer_refuses_bfloat16_parts``; docs/distributed.md).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

import torchcx
import torchcx.distributed
from torchcx.explain import _capture

pytestmark = pytest.mark.skipif(
    not dist.is_available() or not dist.is_gloo_available(), reason="torch.distributed with gloo is not available"
)

WORLD = 2
STEPS = 3
N = 16
PARTS: dict[str, torch.dtype | None] = {
    "complex64": None,
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}

#: name: (engine, part, compiled with torchcx). Compiled runs cost the most here (2 cores),
#: so every engine is compiled with bfloat16 parts (what torchcx adds) and eager runs cover
#: the other cases (native complex64 under compile was checked when this was written).
SCENARIOS: dict[str, tuple[str, str, bool]] = {
    "ddp-complex64-compiled": ("ddp", "complex64", True),
    "ddp-bfloat16-compiled": ("ddp", "bfloat16", True),
    "ddp-float16": ("ddp", "float16", False),
    "fsdp-complex64": ("fsdp", "complex64", False),
    "fsdp-bfloat16-compiled": ("fsdp", "bfloat16", True),
    "fsdp-float16": ("fsdp", "float16", False),
    # float32 master weights (float32 parts), computed and communicated in bfloat16 parts
    "fsdp-mixed-bfloat16-compiled": ("fsdp-mixed", "float32", True),
    "tp-complex64": ("tp", "complex64", False),
    "tp-bfloat16-compiled": ("tp", "bfloat16", True),
}


# -- models and data ---------------------------------------------------------------------------


def _parameter(shape: tuple[int, ...], part: torch.dtype | None, g: torch.Generator) -> nn.Parameter:
    w = torch.randn(*shape, dtype=torch.complex64, generator=g) / shape[-1] ** 0.5
    return nn.Parameter(torchcx.as_complex_tensor(w, part) if part is not None else w)


class SpectralNet(nn.Module):
    """A linear layer, a learnt FFT filter, a gated nonlinearity and a linear layer."""

    def __init__(self, part: torch.dtype | None) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.w1 = _parameter((N, N), part, g)
        self.spectrum = _parameter((N,), part, g)
        self.w2 = _parameter((N, N), part, g)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x @ self.w1.mT
        h = torch.fft.ifft(torch.fft.fft(h) * self.spectrum)
        h = h * torch.sigmoid(h.abs())
        return h @ self.w2.mT


class MLP(nn.Module):
    """Two complex nn.Linear layers, for column- then row-wise tensor parallelism."""

    def __init__(self, part: torch.dtype | None) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.up = nn.Linear(N, 2 * N, dtype=torch.complex64)
        self.down = nn.Linear(2 * N, N, dtype=torch.complex64)
        for layer in (self.up, self.down):
            layer.weight = _parameter(tuple(layer.weight.shape), part, g)
            layer.bias = _parameter(tuple(layer.bias.shape), part, g)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.up(x)
        return self.down(h * torch.sigmoid(h.abs()))


def batch(part: torch.dtype | None) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(8, N, dtype=torch.complex64, generator=g)
    y = torch.randn(8, N, dtype=torch.complex64, generator=g)
    if part is not None:
        x, y = torchcx.as_complex_tensor(x, part), torchcx.as_complex_tensor(y, part)
    return x, y


def loss_fn(model: Any, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    d = model(x) - y
    return (d.abs() ** 2).float().mean()  # the loss in float32


def optimizer(engine: str, model: nn.Module, part: torch.dtype | None) -> torch.optim.Optimizer:
    if engine == "tp":
        return torch.optim.SGD(model.parameters(), lr=0.1)
    # Adam's default eps, 1e-8, is 0 in float16 (smallest subnormal 6e-8): 0/0 at a zero gradient
    return torch.optim.Adam(model.parameters(), lr=1e-2, eps=1e-3 if part == torch.float16 else 1e-8)


def _local(t: torch.Tensor) -> torch.Tensor:
    return (t.full_tensor() if hasattr(t, "full_tensor") else t).detach().clone()


# -- the two processes -------------------------------------------------------------------------


def _distributed(
    engine: str, part: torch.dtype | None, compiled: bool, rank: int, graphs: list[tuple[str, bool]]
) -> dict[str, torch.Tensor]:
    """Parameters after ``STEPS`` steps of ``engine``; ``graphs`` receives (kind, real-only) of
    every graph torchcx compiled."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    torch._dynamo.reset()
    x, y = batch(part)
    if engine == "tp":  # every rank sees the whole batch; the layers are split
        model = MLP(part)
        parallelize_module(
            model, init_device_mesh("cpu", (WORLD,)), {"up": ColwiseParallel(), "down": RowwiseParallel()}
        )
        wrapped: nn.Module = model
    else:  # each rank trains on its half of the batch
        half = x.shape[0] // WORLD
        x, y = x[rank * half : (rank + 1) * half], y[rank * half : (rank + 1) * half]
        model = SpectralNet(part)
        if engine == "fsdp-mixed":
            from torch.distributed.fsdp import MixedPrecisionPolicy

            wrapped = torchcx.distributed.fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16))
            x, y = x.with_component_dtype(torch.bfloat16), y.with_component_dtype(torch.bfloat16)
        elif engine == "ddp":
            # bfloat16 parts: the Python reducer (the C++ one makes float16-part buckets)
            mode = "python_reducer" if part == torch.bfloat16 else "ddp_optimizer"
            with torch._dynamo.config.patch(optimize_ddp=mode):
                wrapped = nn.parallel.DistributedDataParallel(model)
        else:
            wrapped = torchcx.distributed.fully_shard(model)
    step = torchcx.compile(wrapped) if compiled else wrapped
    opt = optimizer(engine, model, part)
    with _capture() as report:
        for _ in range(STEPS):
            opt.zero_grad()
            loss_fn(step, x, y).backward()
            opt.step()
    graphs += [(g.kind, g.real_only) for g in report.graphs]
    return {k: _local(v) for k, v in model.state_dict().items()}


def _checkpoint_resume(part: torch.dtype | None, directory: str) -> bool:
    """FSDP2 training resumed from a torch.distributed.checkpoint equals training on (eager)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    def setup() -> tuple[nn.Module, torch.optim.Optimizer]:
        model = torchcx.distributed.fully_shard(SpectralNet(part))
        return model, torch.optim.Adam(model.parameters(), lr=1e-2)

    x, y = batch(part)
    half = x.shape[0] // WORLD
    rank = dist.get_rank()
    x, y = x[rank * half : (rank + 1) * half], y[rank * half : (rank + 1) * half]

    def train(model: nn.Module, opt: torch.optim.Optimizer, steps: int) -> None:
        for _ in range(steps):
            opt.zero_grad()
            loss_fn(model, x, y).backward()
            opt.step()

    model, opt = setup()
    train(model, opt, 2)
    model_state, opt_state = get_state_dict(model, opt)
    dcp.save({"model": model_state, "optim": opt_state}, checkpoint_id=directory)
    train(model, opt, 1)

    resumed, resumed_opt = setup()
    model_state, opt_state = get_state_dict(resumed, resumed_opt)
    state = {"model": model_state, "optim": opt_state}
    dcp.load(state, checkpoint_id=directory)
    set_state_dict(resumed, resumed_opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    train(resumed, resumed_opt, 1)
    a, b = model.state_dict(), resumed.state_dict()
    return all(_equal(_local(a[k]), _local(b[k])) for k in a)


def _worker(rank: int, port: int, out: str) -> None:
    # As in the test processes (conftest.py): every scenario lowers its graphs and reports them
    # (test_compiled_graphs_are_real_only), none loads another's from AOTAutograd's cache.
    torch._functorch.config.enable_autograd_cache = False
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    try:
        results: dict[str, Any] = {}
        for name, (engine, part, compiled) in SCENARIOS.items():
            results[f"graphs-{name}"] = graphs = []
            results[name] = _distributed(engine, PARTS[part], compiled, rank, graphs)
        for part in ("complex64", "bfloat16"):
            results[f"checkpoint-{part}"] = _checkpoint_resume(PARTS[part], os.path.join(out, f"checkpoint-{part}"))
        for part in ("complex64", "bfloat16"):
            results[f"bytes-{part}"] = _step_bytes(PARTS[part])
        results["refusals"] = _refusals()
        results["ddp-cpp-reducer-bfloat16"] = _ddp_cpp_reducer_error()
        if rank == 0:
            torch.save(results, os.path.join(out, "results.pt"))
    finally:
        dist.destroy_process_group()


def _step_bytes(part: torch.dtype | None) -> dict[str, int]:
    """Bytes sent in one eager DDP step and one FSDP2 step (the counter sees eager collectives).

    Counted from the first forward on: DDP's set-up also broadcasts the parameters and
    compares their shapes across ranks (integer metadata, the same for every part dtype).
    """
    x, y = batch(part)
    with torch._dynamo.config.patch(optimize_ddp="python_reducer" if part is not None else "ddp_optimizer"):
        ddp = nn.parallel.DistributedDataParallel(SpectralNet(part))
    fsdp = torchcx.distributed.fully_shard(SpectralNet(part))
    with torchcx.distributed.CollectiveBytes() as sent:
        loss_fn(ddp, x, y).backward()
        loss_fn(fsdp, x, y).backward()
    return dict(sent.by_op)


def _ddp_cpp_reducer_error() -> str | None:
    """The error of one backward through DDP's C++ reducer with bfloat16 parts (None: no error).

    Both ranks raise at the same point, the reducer's copy of the first gradient into its
    bucket, before any bucket is all-reduced, so no collective is left waiting.
    """
    x, y = batch(torch.bfloat16)
    with torch._dynamo.config.patch(optimize_ddp="ddp_optimizer"):  # the default: the C++ reducer
        ddp = nn.parallel.DistributedDataParallel(SpectralNet(torch.bfloat16))
    try:
        loss_fn(ddp, x, y).backward()
    except RuntimeError as e:
        return str(e)
    return None


def _refusals() -> list[str]:
    """The errors of reductions that are not componentwise on complex values."""
    z = torchcx.as_complex_tensor(torch.ones(4, dtype=torch.complex64), torch.bfloat16)
    group = dist.group.WORLD
    calls = [
        lambda: torch.ops._c10d_functional.all_reduce(z, "max", group.group_name),
        lambda: torch.ops._c10d_functional.reduce_scatter_tensor(z, "product", WORLD, group.group_name),
        lambda: _allreduce_min(z, group),
    ]
    errors = []
    for call in calls:
        try:
            call()
        except ValueError as e:
            errors.append(str(e))
    return errors


def _allreduce_min(z: torch.Tensor, group: dist.ProcessGroup) -> None:
    # the in-place c10d op through the process group (torch.distributed.all_reduce refuses
    # MIN on a complex tensor itself, before any torchcx code runs)
    options = dist.AllreduceOptions()
    options.reduceOp = dist.ReduceOp.MIN
    group.allreduce([z], options)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def distributed_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("distributed")
    mp.spawn(_worker, args=(_free_port(), str(out)), nprocs=WORLD, join=True)
    return torch.load(Path(out) / "results.pt", weights_only=False)


# -- one process -----------------------------------------------------------------------------


def _single(engine: str, part: torch.dtype | None, compiled: bool) -> dict[str, torch.Tensor]:
    torch._dynamo.reset()
    model: nn.Module = MLP(part) if engine == "tp" else SpectralNet(part)
    step = torchcx.compile(model) if compiled else model
    opt = optimizer(engine, model, part)
    x, y = batch(part)
    half = x.shape[0] // WORLD
    if engine == "fsdp-mixed":
        return _single_mixed(model, opt, compiled)
    for _ in range(STEPS):
        opt.zero_grad()
        if engine == "tp":
            loss_fn(step, x, y).backward()
        else:  # what the two ranks compute, summed as the collective sums (module docstring)
            for r in range(WORLD):
                (loss_fn(step, x[r * half : (r + 1) * half], y[r * half : (r + 1) * half]) / WORLD).backward()
        opt.step()
    return {k: v.detach() for k, v in model.state_dict().items()}


def _single_mixed(master: nn.Module, opt: torch.optim.Optimizer, compiled: bool) -> dict[str, torch.Tensor]:
    """Mixed precision by hand: bfloat16 copies of the float32 masters compute; their
    gradients, summed in bfloat16 as FSDP2 reduce-scatters them, step the masters."""
    low = SpectralNet(torch.bfloat16)
    step = torchcx.compile(low) if compiled else low
    x, y = (t.with_component_dtype(torch.bfloat16) for t in batch(torch.float32))
    half = x.shape[0] // WORLD
    for _ in range(STEPS):
        opt.zero_grad()
        low.zero_grad()
        with torch.no_grad():
            for p, q in zip(low.parameters(), master.parameters()):
                p.copy_(q.with_component_dtype(torch.bfloat16))
        for r in range(WORLD):
            (loss_fn(step, x[r * half : (r + 1) * half], y[r * half : (r + 1) * half]) / WORLD).backward()
        for p, q in zip(low.parameters(), master.parameters()):
            q.grad = p.grad.with_component_dtype(torch.float32)
        opt.step()
    return {k: v.detach() for k, v in master.state_dict().items()}


def _values(t: torch.Tensor) -> torch.Tensor:
    """Real float64 values (..., 2) of a native or ComplexTensor."""
    if isinstance(t, torchcx.ComplexTensor):
        return torch.stack([t.re.double(), t.im.double()], dim=-1)
    return torch.view_as_real(t).double()


def _equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    return type(a) is type(b) and a.dtype == b.dtype and torch.equal(_values(a), _values(b))


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_matches_single_process(name: str, distributed_runs: dict[str, Any]) -> None:
    engine, part_name, compiled = SCENARIOS[name]
    part = PARTS[part_name]
    got, want = distributed_runs[name], _single(engine, part, compiled)
    assert got.keys() == want.keys()
    for key in want:
        a, b = got[key], want[key]
        assert type(a) is type(b), key
        if isinstance(b, torchcx.ComplexTensor):
            assert a.component_dtype == b.component_dtype, key
        if engine != "tp" and part != torch.float16:
            assert _equal(a, b), f"{key}: max difference {(_values(a) - _values(b)).abs().max().item()}"
        elif engine != "tp":  # one float16 ulp of the largest parameter (module docstring)
            assert (_values(a) - _values(b)).abs().max().item() <= 2.0**-10 * _values(b).abs().max().item(), key
        elif part is None:
            torch.testing.assert_close(_values(a), _values(b), rtol=1e-6, atol=1e-7, msg=key)
        else:  # one bfloat16 ulp of the largest parameter (module docstring)
            ulp = 2.0**-7 * _values(b).abs().max().item() / 2
            assert (_values(a) - _values(b)).abs().max().item() <= ulp, key


@pytest.mark.parametrize("name", [name for name, (*_, compiled) in SCENARIOS.items() if compiled])
def test_compiled_graphs_are_real_only(name: str, distributed_runs: dict[str, Any]) -> None:
    graphs = distributed_runs[f"graphs-{name}"]
    assert {kind for kind, _ in graphs} >= {"forward", "backward"}, graphs
    assert all(real_only for _, real_only in graphs), graphs


@pytest.mark.parametrize("part", ["complex64", "bfloat16"])
def test_checkpoint_resume(part: str, distributed_runs: dict[str, Any]) -> None:
    assert distributed_runs[f"checkpoint-{part}"] is True


def test_non_componentwise_reductions_are_refused(distributed_runs: dict[str, Any]) -> None:
    errors = distributed_runs["refusals"]
    assert len(errors) == 3, errors
    for error, name in zip(errors, ["max", "product", "MIN"]):
        assert name in error and "bfloat16" in error and "only SUM and AVG" in error, error


def test_ddp_cpp_reducer_refuses_bfloat16_parts(distributed_runs: dict[str, Any]) -> None:
    # The C++ reducer would convert bfloat16 gradients to its float16-part buckets and sum
    # them as float16 (ops/distributed.py, Note [DDP's C++ reducer and bfloat16 parts]).
    error = distributed_runs["ddp-cpp-reducer-bfloat16"]
    assert error is not None, "DDP's C++ reducer converted bfloat16 gradients to float16 silently"
    for words in (
        "DistributedDataParallel",
        "of shape (",
        "bfloat16 parts",
        "complex32",
        'optimize_ddp="python_reducer"',
    ):
        assert words in error, error


def test_explicit_complex32_conversions_are_not_refused() -> None:
    # The refusal above is of the reducer's copy during gradient accumulation only: asking
    # for float16 parts in code is a conversion the user wrote. No process group needed.
    z = torchcx.as_complex_tensor(torch.tensor([1 + 2j, 3e5 - 1e-3j], dtype=torch.complex64), torch.bfloat16)
    want = torch.stack([z.re.half(), z.im.half()], dim=-1)  # float16 parts (3e5 is inf there)
    assert torch.equal(torch.view_as_real(z.to_interleaved(torch.complex32)), want)
    native = torch.empty(2, dtype=torch.complex32)
    assert torch.equal(torch.view_as_real(native.copy_(z)), want)
    out = torch.empty(2, dtype=torch.complex32)
    assert torch.equal(torch.view_as_real(torch.mul(z, 0.5, out=out)), (want.float() * 0.5).half())
    assert z.to(torch.complex32).component_dtype == torch.bfloat16  # Note [dtype of a ComplexTensor]


def test_bfloat16_parts_send_half_the_bytes(distributed_runs: dict[str, Any]) -> None:
    c64, bf16 = distributed_runs["bytes-complex64"], distributed_runs["bytes-bfloat16"]
    assert sum(c64.values()) > 0
    assert 2 * sum(bf16.values()) == sum(c64.values()), (c64, bf16)


def test_fsdp_copy_ops_keep_the_parts() -> None:
    # FSDP2 allocates its all-gather buffer from the reported dtype (complex32: float16
    # parts); all_gather_copy_in returns one with the inputs' bfloat16 parts instead, and
    # the copy-out and chunk_cat copy part by part. No process group needed.
    a = torchcx.as_complex_tensor(torch.randn(3, dtype=torch.complex64) * 1e-6, torch.bfloat16)  # below float16's range
    b = torchcx.as_complex_tensor(torch.randn(2, dtype=torch.complex64), torch.bfloat16)
    buffer = torch.empty(10, dtype=torch.complex32)
    shard, output = torch.ops.fsdp.all_gather_copy_in([a, b], buffer, [3, 2], 5, 1)
    assert isinstance(output, torchcx.ComplexTensor) and output.component_dtype == torch.bfloat16
    assert _equal(shard, torch.cat([a, b])) and _equal(output[5:], shard)
    outs = [torchcx.as_complex_tensor(torch.zeros(2, 3, dtype=torch.complex64), torch.bfloat16)]
    outs.append(torchcx.as_complex_tensor(torch.zeros(2, 2, dtype=torch.complex64), torch.bfloat16))
    torch.ops.fsdp.split_with_sizes_copy(output.view(2, 5), [3, 2], dim=1, out=outs)
    assert _equal(outs[0][1], a) and _equal(outs[1][1], b)
    out = torchcx.as_complex_tensor(torch.zeros(10, dtype=torch.complex64), torch.bfloat16)
    full = torch.cat([shard, shard])  # (output[:5], rank 0's slot, was never written)
    pieces = [full[:4], full[4:]]  # even sizes, as FSDP2 pads gradients to
    torch.ops.fsdp.chunk_cat(pieces, 0, 2, out=out.view(2, 5))  # as FSDP2 calls it
    assert _equal(out.view(2, 5), torch._chunk_cat(pieces, 0, 2))
