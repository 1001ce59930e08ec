"""Collectives on ComplexTensors: the c10d ops, their functional forms and FSDP2's copy ops.

Note [Collectives run on the parts]
-----------------------------------
A collective moves or sums values; on complex values both are componentwise,
so a collective over a ComplexTensor is the same collective over its real and
imaginary parts, in the parts' dtype: bfloat16 parts travel as bfloat16, half
the bytes of complex64. SUM and AVG are exact on the parts. MAX and MIN are
refused (complex numbers have no order) and so are PRODUCT (not componentwise:
``(a+bi)(c+di)`` mixes the parts) and the bitwise ops.

* The in-place c10d ops (``broadcast_``, ``allreduce_``, ``allgather_``, ...)
  that ``torch.distributed`` and DDP call run once on a *carrier*: a
  contiguous real ``(*shape, 2)`` tensor holding both parts. Every rank's
  carrier has the same layout whether its parts interleave or not, so ranks
  may hold their values in different layouts, and dimension 0 (along which
  all-gather and reduce-scatter concatenate and split) is the ComplexTensor's
  own dimension 0. When the parts interleave contiguously in one buffer the
  carrier *is* that memory and the op stays asynchronous. Otherwise it is a
  stacked copy, and the results are copied back into the parts after waiting
  for the op: the call then returns a completed Work (no overlap of that
  collective with compute, the same bytes).
* The functional ops (``_c10d_functional``, what ``torch.compile`` and DTensor
  emit) run on each part separately: two collectives into two result
  tensors, which stay asynchronous until ``wait_tensor`` waits for both.
  Inductor schedules them like any real collective.
* FSDP2 all-gathers a ComplexTensor parameter as its two real parts
  (``ComplexTensor.fsdp_pre_all_gather``); its ``fsdp.*`` copy ops meet
  ComplexTensors in the gradients' reduce-scatter (``chunk_cat``) and where a
  ComplexTensor reaches them otherwise. They are copies, which ComplexTensor's
  own ops do part by part; ``all_gather_copy_in`` also allocates the
  all-gather buffer with the inputs' parts (FSDP allocates it from ``dtype``,
  and the ``complex32`` that 16-bit parts report would mean float16 parts).

Ranks must agree on each tensor's part dtype, as they must on a real tensor's
dtype.

Note [DDP's C++ reducer and bfloat16 parts]
-------------------------------------------
DDP's C++ reducer allocates its gradient buckets in C++ from each parameter's
reported dtype, ``complex32`` for 16-bit parts: native tensors with float16
parts, which torchcx never sees allocated. Per parameter and step it issues:

1. copy-in, in the hook it runs after ``AccumulateGrad`` (the parameter's
   gradient accumulation): ``aten.mul.out(grad, 1 / world_size,
   out=bucket_view)``, where ``grad`` is the ComplexTensor gradient and
   ``bucket_view`` a native ``complex32`` view of the bucket;
2. the all-reduce of the bucket, natively on its float16 lanes (no ComplexTensor
   is involved, so torchcx does not see it);
3. copy-out, once backward is done: ``aten.copy_(grad, bucket_view)``.

For float16 parts all three are exact. For bfloat16 parts step 1 converts the
gradient to float16 (values beyond float16's range become inf, small ones lose
bits), and nothing can repair that later: keeping bfloat16 *bit patterns* in the
bucket's 16-bit lanes would survive the copies but not step 2, which sums them
as float16 numbers. So the copy-in is refused (``_refuse_ddp_bfloat16_bucket``)
with what to do instead: DDP's Python reducer, which all-reduces each gradient
as it is (through the collectives above). The check recognizes the copy-in as
a write into a native ``complex32`` tensor of a bfloat16-part ComplexTensor
while autograd runs an ``AccumulateGrad`` node; explicit conversions
(``.to(torch.complex32)``, ``to_interleaved(torch.complex32)``, a copy outside
gradient accumulation) are not affected.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

# Both define ops registered below (torch.compile's imports load them anyway).
import torch.distributed._functional_collectives
import torch.distributed.fsdp._fully_shard._fsdp_collectives
from torch import Tensor
from torch._ops import OpOverload
from torch.utils._pytree import tree_leaves, tree_map

from ..tensor import ComplexTensor, _interleaved_pair, _PlanarBase
from ._common import register
from ._registry import REAL_VIEW_OPS, WRITE_CHECKS

aten = torch.ops.aten
c10d = torch.ops.c10d
functional = torch.ops._c10d_functional


# -- reduce ops ------------------------------------------------------------------------------

#: Reductions that are componentwise on complex values, by c10d's ReduceOp number and by
#: the name the functional ops take.
_COMPONENTWISE_REDUCTIONS = {int(dist.ReduceOp.SUM), int(dist.ReduceOp.AVG)}
_COMPONENTWISE_NAMES = {"sum", "avg"}


def _reduce_op_name(reduce_op: Any) -> tuple[str, bool]:
    """The reduce op's name and whether it is componentwise on complex values."""
    if isinstance(reduce_op, str):
        return reduce_op, reduce_op.lower() in _COMPONENTWISE_NAMES
    # A c10d ReduceOp reaches __torch_dispatch__ as a TorchScript object with an op() method.
    code = reduce_op.op() if isinstance(reduce_op, torch.ScriptObject) else int(reduce_op.op)
    return dist.ReduceOp.RedOpType(code).name, code in _COMPONENTWISE_REDUCTIONS


def _check_reduce_op(op: OpOverload, reduce_op: Any, tensors: Any) -> None:
    name, ok = _reduce_op_name(reduce_op)
    if not ok:
        parts = {t.component_dtype for t in tree_leaves(tensors) if isinstance(t, ComplexTensor)}
        raise ValueError(
            f"torchcx: {op} with ReduceOp {name} on complex tensors (parts {sorted(map(str, parts))}): "
            "complex numbers have no order (MAX, MIN) and their product is not componentwise "
            "(PRODUCT); only SUM and AVG reduce complex values"
        )


# -- carriers (in-place c10d ops) ------------------------------------------------------------


def _carrier(z: _PlanarBase) -> tuple[Tensor, bool]:
    """A contiguous real ``(*z.shape, 2)`` tensor with z's values, and whether it is z's memory.

    For a RealView (``view_as_real`` of planar parts, what ``torch.distributed``
    passes for a complex tensor) the same tensor: its shape already has the 2.
    """
    pair = _interleaved_pair(z.re, z.im)
    if pair is not None and pair.is_contiguous():
        return pair, True
    return torch.stack([z.re, z.im], dim=-1), False


def _in_place_collective(op: OpOverload, written: tuple[str, ...], *, real_view: bool) -> Callable[..., Any]:
    """An implementation of in-place c10d op ``op`` on carriers; ``written`` names its output arguments.

    ``real_view``: the implementation RealViews dispatch to. ``torch.distributed``
    passes ``view_as_real`` of every complex tensor, which is a plain real tensor
    for interleaved parts, so plain real tensors may sit next to RealViews there;
    next to a ComplexTensor they mean ranks or arguments disagree.
    """
    names = [a.name for a in op._schema.arguments]

    def impl(*args: Any, **kwargs: Any) -> Any:
        bound = dict(zip(names, args)) | kwargs
        if "reduce_op" in bound and not real_view:
            # A RealView is a real tensor to its user (MAX of view_as_real is componentwise);
            # torch.distributed refuses MAX and friends on complex tensors before viewing them.
            _check_reduce_op(op, bound["reduce_op"], list(bound.values()))
        copied: list[tuple[_PlanarBase, Tensor]] = []

        def to_carrier(written_arg: bool) -> Callable[[Any], Any]:
            def one(x: Any) -> Any:
                if isinstance(x, _PlanarBase):
                    carrier, aliases = _carrier(x)
                    if written_arg and not aliases:
                        copied.append((x, carrier))
                    return carrier
                if isinstance(x, Tensor) and not real_view:
                    raise TypeError(
                        f"torchcx: {op} mixes complex and real tensors ({x.dtype}); "
                        "every rank's tensors must be complex"
                    )
                return x

            return one

        real = {
            n: tree_map(to_carrier(n in written), v) if any(isinstance(t, _PlanarBase) for t in tree_leaves(v)) else v
            for n, v in bound.items()
        }
        result = op(**real)
        work = result[1] if isinstance(result, tuple) else result
        if copied:
            # The carriers are copies: the values reach the parts only once the op is done.
            work.wait()
            with torch.no_grad():
                for z, carrier in copied:
                    z.re.copy_(carrier[..., 0])
                    z.im.copy_(carrier[..., 1])
        if isinstance(result, tuple):
            return bound[written[0]], work
        return work

    impl.__name__ = impl.__qualname__ = f"c10d_{op.overloadpacket.__name__.strip('_')}_impl"
    return impl


_IN_PLACE: dict[OpOverload, tuple[str, ...]] = {
    c10d.broadcast_.default: ("tensors",),
    c10d.allreduce_.default: ("tensors",),
    c10d.allreduce_coalesced_.default: ("tensors",),
    c10d.reduce_.default: ("tensors",),
    c10d.allgather_.default: ("output_tensors",),
    c10d._allgather_base_.default: ("output_tensor",),
    c10d.allgather_coalesced_.default: ("output_lists",),
    c10d.allgather_into_tensor_coalesced_.default: ("outputs",),
    c10d.reduce_scatter_.default: ("output_tensors",),
    c10d._reduce_scatter_base_.default: ("output_tensor",),
    c10d.reduce_scatter_tensor_coalesced_.default: ("outputs",),
    c10d.alltoall_base_.default: ("output",),
    c10d.gather_.default: ("output_tensors",),
    c10d.scatter_.default: ("output_tensors",),
    c10d.send.default: (),
    c10d.recv_.default: ("tensors",),
}

for _op, _outputs in _IN_PLACE.items():
    register(_op)(_in_place_collective(_op, _outputs, real_view=False))
    REAL_VIEW_OPS[_op] = _in_place_collective(_op, _outputs, real_view=True)


# -- DDP's C++ reducer -----------------------------------------------------------------------


def _written(func: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The arguments op ``func`` writes to."""
    out = []
    for i, a in enumerate(func._schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            out.append(args[i] if i < len(args) and not a.kwarg_only else kwargs.get(a.name))
    return out


def _refuse_ddp_bfloat16_bucket(func: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Raise where DDP's C++ reducer would copy a bfloat16-part gradient into its float16-part bucket.

    See Note [DDP's C++ reducer and bfloat16 parts]. It runs before every write, so the
    cheapest test comes first: outside gradient accumulation there is no AccumulateGrad node.
    """
    node = torch._C._current_autograd_node()
    if not isinstance(node, torch._C._functions.AccumulateGrad):
        return
    if not any(
        isinstance(t, Tensor) and not isinstance(t, _PlanarBase) and t.dtype == torch.complex32
        for t in tree_leaves(_written(func, args, kwargs))
    ):
        return
    if not any(
        isinstance(t, ComplexTensor) and t.component_dtype == torch.bfloat16 for t in tree_leaves((args, kwargs))
    ):
        return
    param = node.variable  # the parameter whose gradient was just accumulated
    raise RuntimeError(
        f"torchcx: DistributedDataParallel's C++ reducer would convert the gradient of a parameter "
        f"of shape {tuple(param.shape)} with bfloat16 parts ({func} into a native torch.complex32 bucket, "
        "whose parts are float16): values beyond float16's range would be lost. The C++ reducer "
        "allocates buckets from the reported dtype, complex32, and all-reduces them as float16. "
        "Build the DDP module with DDP's Python reducer, which all-reduces each gradient in its "
        'own parts: `with torch._dynamo.config.patch(optimize_ddp="python_reducer"): '
        "model = DistributedDataParallel(model)` (or use float32 parts, or "
        "torchcx.distributed.fully_shard). See docs/distributed.md."
    )


WRITE_CHECKS.append(_refuse_ddp_bfloat16_bucket)


# -- functional collectives (torch.compile, DTensor) -----------------------------------------


def _parts_of(xs: list[Any]) -> list[Tensor]:
    return [p for z in xs for p in (z.re, z.im)]


def _pairs(parts: list[Tensor]) -> list[ComplexTensor]:
    return [ComplexTensor(parts[i], parts[i + 1]) for i in range(0, len(parts), 2)]


@register(functional.all_reduce.default)
def all_reduce_impl(x: ComplexTensor, reduce_op: str, group_name: Any) -> ComplexTensor:
    _check_reduce_op(functional.all_reduce.default, reduce_op, x)
    return ComplexTensor(*(functional.all_reduce(p, reduce_op, group_name) for p in (x.re, x.im)))


@register(functional.all_reduce_.default)
def all_reduce__impl(x: ComplexTensor, reduce_op: str, group_name: Any) -> ComplexTensor:
    _check_reduce_op(functional.all_reduce_.default, reduce_op, x)
    for p in (x.re, x.im):
        functional.all_reduce_(p, reduce_op, group_name)
    return x


@register(functional.all_reduce_coalesced.default)
def all_reduce_coalesced_impl(xs: list[ComplexTensor], reduce_op: str, group_name: Any) -> list[ComplexTensor]:
    _check_reduce_op(functional.all_reduce_coalesced.default, reduce_op, xs)
    # one coalesced collective over every part
    return _pairs(functional.all_reduce_coalesced(_parts_of(xs), reduce_op, group_name))


@register(functional.all_reduce_coalesced_.default)
def all_reduce_coalesced__impl(xs: list[ComplexTensor], reduce_op: str, group_name: Any) -> list[ComplexTensor]:
    _check_reduce_op(functional.all_reduce_coalesced_.default, reduce_op, xs)
    functional.all_reduce_coalesced_(_parts_of(xs), reduce_op, group_name)
    return xs


@register(functional.all_gather_into_tensor.default)
def all_gather_into_tensor_impl(x: ComplexTensor, group_size: int, group_name: Any) -> ComplexTensor:
    # each part gathers along dim 0, the ComplexTensor's own dim 0
    return ComplexTensor(*(functional.all_gather_into_tensor(p, group_size, group_name) for p in (x.re, x.im)))


@register(functional.all_gather_into_tensor_out.default)
def all_gather_into_tensor_out_impl(
    x: ComplexTensor, group_size: int, group_name: Any, *, out: ComplexTensor
) -> ComplexTensor:
    for p, o in zip((x.re, x.im), (out.re, out.im)):
        functional.all_gather_into_tensor_out(p, group_size, group_name, out=o)
    return out


@register(functional.all_gather_into_tensor_coalesced.default)
def all_gather_into_tensor_coalesced_impl(
    xs: list[ComplexTensor], group_size: int, group_name: Any
) -> list[ComplexTensor]:
    return _pairs(functional.all_gather_into_tensor_coalesced(_parts_of(xs), group_size, group_name))


@register(functional.reduce_scatter_tensor.default)
def reduce_scatter_tensor_impl(x: ComplexTensor, reduce_op: str, group_size: int, group_name: Any) -> ComplexTensor:
    _check_reduce_op(functional.reduce_scatter_tensor.default, reduce_op, x)
    return ComplexTensor(
        *(functional.reduce_scatter_tensor(p, reduce_op, group_size, group_name) for p in (x.re, x.im))
    )


@register(functional.reduce_scatter_tensor_coalesced.default)
def reduce_scatter_tensor_coalesced_impl(
    xs: list[ComplexTensor], reduce_op: str, group_size: int, group_name: Any
) -> list[ComplexTensor]:
    _check_reduce_op(functional.reduce_scatter_tensor_coalesced.default, reduce_op, xs)
    return _pairs(functional.reduce_scatter_tensor_coalesced(_parts_of(xs), reduce_op, group_size, group_name))


@register(functional.all_to_all_single.default)
def all_to_all_single_impl(
    x: ComplexTensor, output_split_sizes: list[int], input_split_sizes: list[int], group_name: Any
) -> ComplexTensor:
    return ComplexTensor(
        *(functional.all_to_all_single(p, output_split_sizes, input_split_sizes, group_name) for p in (x.re, x.im))
    )


@register(functional.broadcast.default)
def broadcast_impl(x: ComplexTensor, src: int, group_name: Any) -> ComplexTensor:
    return ComplexTensor(*(functional.broadcast(p, src, group_name) for p in (x.re, x.im)))


@register(functional.broadcast_.default)
def broadcast__impl(x: ComplexTensor, src: int, group_name: Any) -> ComplexTensor:
    for p in (x.re, x.im):
        functional.broadcast_(p, src, group_name)
    return x


@register(functional.wait_tensor.default)
def wait_tensor_impl(x: ComplexTensor) -> ComplexTensor:
    # the two parts are two collectives' results (or views of one carrier: then the second
    # wait finds no pending work and returns at once)
    return ComplexTensor(functional.wait_tensor(x.re), functional.wait_tensor(x.im))


# -- FSDP2's copy ops ------------------------------------------------------------------------


def all_gather_copy_in_impl(
    all_gather_inputs: list[ComplexTensor],
    all_gather_output: Tensor,
    inp_split_sizes: list[int],
    all_gather_input_numel: int,
    rank: int,
) -> tuple[ComplexTensor, ComplexTensor]:
    part = all_gather_inputs[0].component_dtype
    if not isinstance(all_gather_output, ComplexTensor) or all_gather_output.component_dtype != part:
        # FSDP allocated the buffer from the inputs' reported dtype (complex32 for bfloat16
        # parts means float16 parts): the buffer FSDP uses is the one returned, so return
        # one with the inputs' parts.
        shape, device = all_gather_output.shape, all_gather_output.device
        all_gather_output = ComplexTensor(
            torch.empty(shape, dtype=part, device=device), torch.empty(shape, dtype=part, device=device)
        )
    all_gather_input = all_gather_output.narrow(0, all_gather_input_numel * rank, all_gather_input_numel)
    with torch.no_grad():
        for dst, src in zip(torch.split(all_gather_input, inp_split_sizes), all_gather_inputs):
            dst.copy_(src)
    return all_gather_input, all_gather_output


def split_with_sizes_copy_impl(
    all_gather_output: ComplexTensor, all_gather_input_split_sizes: list[int], dim: int = 0, *, out: list[Tensor]
) -> None:
    with torch.no_grad():
        for dst, src in zip(out, torch.split(all_gather_output, all_gather_input_split_sizes, dim=dim)):
            dst.copy_(src)


def chunk_cat_impl(tensors: list[ComplexTensor], dim: int, num_chunks: int, *, out: ComplexTensor) -> None:
    with torch.no_grad():
        out.copy_(torch._chunk_cat(tensors, dim, num_chunks))


register(torch.ops.fsdp.all_gather_copy_in.default)(all_gather_copy_in_impl)
register(torch.ops.fsdp.split_with_sizes_copy.default)(split_with_sizes_copy_impl)
register(torch.ops.fsdp.chunk_cat.default)(chunk_cat_impl)


# -- torch.distributed._functional_collectives' wrapper ----------------------------------------


def _wrap_tensor_autograd_impl(x: ComplexTensor) -> ComplexTensor:
    # Functional collectives wrap their result in an AsyncCollectiveTensor (which waits on
    # first use); a ComplexTensor result waits for its parts here instead.
    return wait_tensor_impl(x)


register(functional._wrap_tensor_autograd.default)(_wrap_tensor_autograd_impl)


# -- what torch.distributed.checkpoint asks of a tensor --------------------------------------------


@register(aten.is_pinned.default)
def is_pinned_impl(x: ComplexTensor, device: Any = None) -> bool:
    # The checkpoint planner records whether each tensor is in pinned memory.
    return x.re.is_pinned(device) and x.im.is_pinned(device)
