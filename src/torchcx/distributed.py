"""torchcx with torch.distributed: FSDP2 and DDP for ComplexTensor parameters.

The collectives themselves run on the parts wherever a ComplexTensor meets
them (``torchcx.ops.distributed``). What this module adds is for the places
where PyTorch *allocates* a communication buffer from a parameter's reported
dtype: ``complex32`` for 16-bit parts, which for a native tensor means float16
parts, so bfloat16 values would be converted (and gradients below float16's
range lost). See docs/distributed.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from .tensor import ComplexTensor, _PlanarBase, _policy_part

__all__ = ["CollectiveBytes", "ComplexReduceScatter", "fully_shard"]


def _reduce_scatter_base() -> type:
    from torch.distributed.fsdp._fully_shard._fsdp_api import ReduceScatter

    return ReduceScatter


class ComplexReduceScatter(_reduce_scatter_base()):  # type: ignore[misc]
    """FSDP2's reduce-scatter, with gradient buffers whose parts have dtype ``part``.

    FSDP2 asks for its reduce-scatter buffers with the gradients' reported
    dtype; for ``complex32`` this gives ComplexTensors with ``part`` parts
    (bfloat16 or float16) instead of native float16-part tensors. Other dtypes
    are allocated as FSDP would. Install it with
    ``module.set_custom_reduce_scatter(ComplexReduceScatter(torch.bfloat16))``
    on each ``fully_shard``-ed module, or use :func:`fully_shard`.
    """

    def __init__(self, part: torch.dtype) -> None:
        if part not in (torch.float16, torch.bfloat16):
            raise TypeError(f"torchcx: ComplexReduceScatter is for 16-bit parts, not {part}")
        self.part = part

    def allocate(self, size: Sequence[int], *, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        if dtype == torch.complex32:
            return ComplexTensor(
                torch.empty(*size, dtype=self.part, device=device), torch.empty(*size, dtype=self.part, device=device)
            )
        return torch.empty(*size, dtype=dtype, device=device)

    def __call__(
        self,
        output_tensor: torch.Tensor,
        input_tensor: torch.Tensor,
        group: dist.ProcessGroup,
        op: Any,
        async_op: bool = False,
    ) -> dist.Work:
        return dist.reduce_scatter_single(output_tensor, input_tensor, op=op, group=group, async_op=async_op)


def _sixteen_bit_part(module: nn.Module, mp_policy: Any) -> torch.dtype | None:
    """The 16-bit part dtype the module's complex gradients will have, if any."""
    policy = _policy_part(getattr(mp_policy, "param_dtype", None))
    parts = set()
    for p in module.parameters():
        local = p.to_local() if hasattr(p, "to_local") else p
        if isinstance(local, ComplexTensor):
            parts.add(policy or local.component_dtype)
        elif p.is_complex() and policy is not None:
            parts.add(policy)
    sixteen = parts & {torch.float16, torch.bfloat16}
    if len(sixteen) > 1:
        raise ValueError(
            "torchcx.distributed.fully_shard: one FSDP module with both bfloat16 and float16 complex parts; "
            "shard them as separate modules"
        )
    return sixteen.pop() if sixteen else None


def fully_shard(module: nn.Module, **kwargs: Any) -> nn.Module:
    """``torch.distributed.fsdp.fully_shard`` for modules with ComplexTensor parameters.

    The same arguments and result. For parameters with 16-bit parts (or a
    ``MixedPrecisionPolicy`` whose ``param_dtype`` is ``torch.bfloat16`` or
    ``torch.float16``: the parts' dtype for complex parameters), it also
    installs :class:`ComplexReduceScatter`, so that gradients are
    reduce-scattered in those parts. Call it wherever you would call
    ``fully_shard`` (per layer, then the root).
    """
    from torch.distributed.fsdp import fully_shard as torch_fully_shard

    sharded = torch_fully_shard(module, **kwargs)
    part = _sixteen_bit_part(module, kwargs.get("mp_policy"))
    if part is not None:
        sharded.set_custom_reduce_scatter(ComplexReduceScatter(part))
    return sharded


#: The arguments holding what each rank contributes to a collective (what it sends).
_INPUT_ARGUMENTS = frozenset({"tensors", "input_tensors", "input_tensor", "input_list", "inputs", "input", "tensor"})


#: Ops in those namespaces that send nothing.
_NOT_COLLECTIVES = frozenset({"wait_tensor", "_wrap_tensor_autograd", "barrier", "monitored_barrier_"})


class CollectiveBytes(TorchDispatchMode):
    """Counts the bytes this process contributes to collectives while active.

    For every c10d or functional collective, the bytes of its input tensors
    (what the rank sends: the tensor of an all-reduce or a broadcast, the
    shard of an all-gather, the full buffer of a reduce-scatter).
    ComplexTensor parts count in their dtype, as they travel; a native complex
    tensor counts 8 bytes per complex64 element. Eager code only (Dynamo does
    not trace under a dispatch mode). ``bytes`` is the total, ``by_op`` the
    split per op::

        with CollectiveBytes() as sent:
            train_step()
        print(sent.bytes, dict(sent.by_op))
    """

    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0
        self.by_op: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN206
        kwargs = kwargs or {}
        if func.namespace in ("c10d", "_c10d_functional") and func.__name__.split(".")[0] not in _NOT_COLLECTIVES:
            names = [a.name for a in func._schema.arguments]
            bound = dict(zip(names, args)) | kwargs
            sent = sum(_nbytes(t) for n, v in bound.items() if n in _INPUT_ARGUMENTS for t in tree_leaves(v))
            self.bytes += sent
            self.by_op[func.__name__] += sent
        return func(*args, **kwargs)


def _nbytes(t: Any) -> int:
    if isinstance(t, _PlanarBase):
        return 2 * t.re.numel() * t.re.element_size()
    if isinstance(t, torch.Tensor):
        return t.numel() * t.element_size()
    return 0
