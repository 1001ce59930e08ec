"""Differential fuzzing: random straight-line complex programs, run eagerly and under ``torchcx.compile``.

A program is data (``Program``: input specs and a list of ``Step``s, each an op
name, the names of the values it reads and literal parameters), so hypothesis
shrinks it step by step, and ``Program.to_source()`` prints it as a Python
module a user can paste. That source is also what runs: ``run_program`` execs
it, so the printed program is exactly the one that failed.

Generation runs each candidate step eagerly on the program's own inputs and
keeps it only if eager accepts it: every generated program is one eager
PyTorch (or eager torchcx, for ComplexTensor inputs) runs, and shapes, dtypes
and in-place legality never need to be modelled here.

The comparison reuses ``compile_harness`` (values, dtypes, shapes,
requires_grad, input mutations, aliasing with inputs including view
metadata, aliasing among outputs, real-only graphs), and adds exact nan/inf
positions per part and, for a third of the programs, input gradients.
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from hypothesis import strategies as st
from torch.utils._pytree import tree_flatten

import torchcx
from compile_harness import alias_map, assert_values, record_inductor_graphs, storages, to_comparable
from torchcx import ComplexTensor

#: Campaign knobs (docs/semantics.md, "Differential fuzzing").
EXAMPLES_ENV = "TORCHCX_FUZZ_EXAMPLES"
SEED_ENV = "TORCHCX_FUZZ_SEED"

NATIVE_KINDS = ("c64", "c128")
LOWP_KINDS = ("bf16", "f16")
REAL_KINDS = ("f32", "f64", "i64")

#: Every op or input the generator leaves out, and why (Documented limitations
#: in docs/limitations.md, or a divergence the fuzzer found that is not fixed).
#: ``kinds`` restricts an exclusion to programs with those input kinds.
EXCLUSIONS: list[dict[str, Any]] = [
    {
        "what": "torch.view_as_real of a ComplexTensor",
        "kinds": LOWP_KINDS,
        "reason": "limitations.md 'view_as_real of a planar ComplexTensor': eager returns a RealView "
        "(read as a copy), compiled replays aliasing; documented difference, not a bug",
    },
    {
        "what": "ill-conditioned ops (log, sqrt, reciprocal, div, angle, sgn, tan-like) with bfloat16/float16 parts",
        "kinds": LOWP_KINDS,
        "reason": "the low-precision tolerance is a per-op ulp bound for well-conditioned ops; near a pole "
        "or branch point one ulp of input moves the result arbitrarily, so no ulp bound is an honest check",
    },
    {
        "what": "gradients of programs with ComplexTensor inputs",
        "kinds": LOWP_KINDS,
        "reason": "gradients are checked on native complex64/complex128 programs; bfloat16 gradients have "
        "no tolerance model beyond the forward's",
    },
    {
        "what": "matmul/einsum/vdot of operands of different dtypes",
        "kinds": None,
        "reason": "eager's einsum skips its dtype check when an operand is empty; Dynamo's fake tensors "
        "(stock torch.compile too) raise 'expected scalar type'. PyTorch's difference, not torchcx's",
    },
    {
        "what": ".real/.imag/view_as_real/isfinite (and where on .real) after an in-place op (or returned after "
        "one), and in-place ops after .real/.imag, in programs with conj views",
        "kinds": None,
        "reason": "PyTorch's functionalization: `b.conj().mul_(3); b.real`, `c.exp_(); c.imag`, and "
        "`v0 = c.imag; v0.exp_()` or `v0 = c.real; c.zero_()` of a conj-view input c, fail under stock "
        "torch.compile too (aot_eager: view_as_real of an unresolved conjugate; the last two found by "
        "the campaign of 2026-12-02, seeds 6002 and 7006); not torchcx's",
    },
    {
        "what": "programs whose eager backward fails (an in-place op on a tensor saved for backward)",
        "kinds": None,
        "reason": "eager raises at backward, AOTAutograd (stock torch.compile too) at the compiled call: "
        "the same error, raised earlier",
    },
    {
        "what": "matmul/einsum/vdot of bool operands",
        "kinds": None,
        "reason": "PyTorch's Inductor: eager and aot_eager accept an einsum of two empty bool tensors "
        "(v0 = torch.isfinite(a), a = randn(4, 0, 3).mT requiring grad; einsum('...ij,...kj->...ik', v0, v0)); "
        "stock torch.compile raises 'Only Tensors of floating point and complex dtype can require gradients' "
        "for float32 a too (joint_graph_passes' pattern matcher, refresh_arg, marks a bool value as requiring "
        "grad), and so does torchcx. Non-empty bool products are refused by eager anyway",
    },
    {
        "what": "in-place ops on (views of) a 0-dim float64 input",
        "kinds": ("f64",),
        "reason": "PyTorch's Dynamo: `v0 = b * 2; b.add_(v0); return (b,)` of b = torch.tensor(0.7, "
        "dtype=torch.float64) leaves b unchanged under stock torch.compile (aot_eager and inductor alike; "
        "float32 and 1-dim inputs are updated); torchcx inherits it",
    },
    {
        "what": "returning conj() or conj().mul_() of a ComplexTensor (or a view of it)",
        "kinds": LOWP_KINDS,
        "reason": "PyTorch's Inductor with tensor subclasses: eager's z.conj() is ComplexTensor(z.re, "
        "z.im._neg_view()), aliasing both parts; AOTAutograd sees a fresh ComplexTensor whose inner outputs "
        "Inductor computes, so the imaginary part is a new buffer (stock torch.compile of the same "
        "subclass program too; aot_eager keeps the view)",
    },
    {
        "what": "complex add/sub/add_/rsub with non-finite complex operands",
        "kinds": None,
        "reason": "limitations.md 'Special values follow NumPy': eager computes y * alpha as a complex "
        "product, so (-inf+0j) + y is (-inf+nanj) eagerly and (-inf+0j) in NumPy and torchcx; a division "
        "after it then differs in class (nan against -0), not only in the parts",
    },
    {
        "what": "FFTs of non-finite values",
        "kinds": None,
        "reason": "limitations.md 'FFTs of non-finite values': every output is non-finite in eager and "
        "torchcx alike, but which are nan rather than infinite follows the algorithm (the real-arithmetic "
        "path multiplies by the twiddles' exact zeros: ifft([-inf+0.5j, 1+2j]) is -inf+nanj, eager's "
        "-inf+1.25j)",
    },
    {
        "what": "matrix products (matmul, einsum) of non-finite complex values",
        "kinds": None,
        "reason": "limitations.md 'Special values follow NumPy': which results are nan rather than infinite "
        "follows the GEMM library: eager's matmul (MKL's cgemm) gives nan+nanj for (inf+0j) @ (1+0j), whose "
        "product is inf+nanj, and eager's own einsum of the same values can give an infinite result (seed 9001)",
    },
    {
        "what": "log/sqrt/rsqrt/angle (branch cut on the negative real axis) in programs with an FFT",
        "kinds": None,
        "reason": "limitations.md 'Signed zeros of FFT outputs': an output bin that is exactly real (here "
        "of zero-padded data) carries a zero imaginary part whose sign follows the FFT library (eager's MKL "
        "-0, NumPy's pocketfft and torchcx's real path +0), and a branch cut turns it into a jump of 2*pi "
        "(seed 9016: log of torch.fft.rfft(c, dim=2, n=3) of a size-1 dim)",
    },
    {
        "what": "in-place ops on (views of) an expand() result",
        "kinds": None,
        "reason": "PyTorch's functionalization: `v0 = b.expand(2, *b.shape); v0.zero_()` writes overlapping "
        "memory; eager zeroes b, stock torch.compile (aot_eager and inductor) leaves other values",
    },
    {
        "what": "in-place ops on views of a ComplexTensor's .real/.imag",
        "kinds": LOWP_KINDS,
        "reason": "PyTorch's AOTAutograd with tensor subclasses: `v = c.imag[None].mul_(3); return v` of a "
        "ComplexTensor c returns a tensor that does not alias c.im under stock torch.compile (aot_eager too)",
    },
    {
        "what": "returning .real/.imag of the result of an in-place op on a ComplexTensor",
        "kinds": LOWP_KINDS,
        "reason": "PyTorch's AOTAutograd with tensor subclasses: `v0 = b.exp_(); return v0.real` of a "
        "ComplexTensor b returns a tensor that does not alias b.re under stock torch.compile (aot_eager and "
        "inductor alike; `b.exp_(); return b.real` aliases); found by the campaign of 2026-12-02, seed 9002",
    },
    {
        "what": "returning conj_physical of .real/.imag (the part itself) of a ComplexTensor the program writes",
        "kinds": LOWP_KINDS,
        "reason": "PyTorch's AOTAutograd with tensor subclasses: `v0 = c.real; c.mul_(2j); return "
        "torch.conj_physical(v0)` returns c.re itself eagerly (conj_physical of a real tensor is the "
        "identity); compiled, a plain tensor aliasing a part of a written subclass input cannot be "
        "described by the subclass's alias metadata, and stock torch.compile (aot_eager too) returns a "
        "fresh tensor (found by run E, seed 13001)",
    },
    {
        "what": "in-place writes (setitem, copy_) of a value that requires grad into an integer or bool tensor",
        "kinds": None,
        "reason": "PyTorch: eager raises 'Autograd not support dtype: Long' for `a[0] = torch.tanh(c)` (a int64, "
        "c requiring grad) in some programs and accepts it in others (after `torch.sigmoid(b)` of a complex b "
        "requiring grad, seed 8004); Dynamo's fake run refuses it always (stock torch.compile and aot_eager too)",
    },
    {
        "what": "in-place ops after a graph break on a view of an offset input",
        "kinds": None,
        "reason": "PyTorch's AOTAutograd (aot_eager too): `v0 = a[:]; graph_break(); v0.add_(v0); return "
        "(a.diagonal(),)` of a = randn(5, 3)[1:] updates a but returns a diagonal with other values: the "
        "second graph's inputs a and v0 alias, and the output view regenerated from their synthetic base "
        "is wrong for a storage offset (a contiguous input passes); seed 8006, where boolean-mask indexing made "
        "the break. Upstream: pytorch/pytorch#198095 (open; fix proposed in #198097)",
    },
    {
        "what": "in-place ops after a graph break in programs with ComplexTensor inputs and conj views",
        "kinds": LOWP_KINDS,
        "reason": "PyTorch's AOTAutograd with tensor subclasses: `v0 = a.conj().mul_(1); v2 = b[b.abs() > 1]; "
        "v0.copy_(a)` of a bfloat16 ComplexTensor a leaves a.im with other values than eager's under aot_eager "
        "too (the output agrees; the input's write-back does not); fuzzing run J, seed 22020",
    },
    {
        "what": "in-place ops after a graph break on (a view of) an input that another value views",
        "kinds": None,
        "reason": "PyTorch's AOTAutograd (aot_eager too), the same cause as the entry above without an offset: "
        "`v0 = a[::2]; v1 = a[:]; graph_break(); v1.zero_(); return (v0.reshape(-1, 1),)` of a contiguous "
        "complex64 or real a fails with \"shape '[2, 1]' is invalid for input of size 4\" (v0 is regenerated "
        "from the second graph's synthetic base as all of a), and `return (v0.conj().mul_(2j),)` with "
        "'incorrect out shape after application of ViewMeta sequence'; fuzzing run J, seed 23007. "
        "Upstream: pytorch/pytorch#198095",
    },
    {
        "what": "in-place ops after a graph break on a view_as_complex input another value views, or on such a view",
        "kinds": None,
        "reason": "PyTorch's AOTAutograd (stock torch.compile and aot_eager too): `v0 = c[0]; graph_break(); "
        "c.mul_(2j); return (torch.tanh(v0),)` of c = view_as_complex(randn(1, 2, 2, 2)) fails with 'aot_autograd() "
        "does not yet handle input mutations on views with different dtypes': the second graph's inputs c and "
        "v0 alias, and their common base is the float32 tensor; fuzzing run I, seed 20003, where boolean-mask "
        "indexing made the break; through `v0 = c.imag` too, run J, seed 22016; and with the view written, `v0 = "
        "a.conj().mul_(3); graph_break(); v0.add_(v0); return (torch.tanh(a),)`, run K, seed 25007. Upstream: "
        "pytorch/pytorch#194747 (open)",
    },
    {
        "what": "a zero gradient where eager's is None (compared as equal)",
        "kinds": None,
        "reason": "PyTorch's AOTAutograd: with `v0 = b[b.abs() > 1]; v0[..., 1:].mul_(-1.0)` and no output "
        "depending on b, eager gives b no gradient and stock torch.compile (aot_eager too) a zero one",
    },
    {
        "what": "which memory an output with no elements shares (compared as sharing none)",
        "kinds": None,
        "reason": "PyTorch's Inductor: `v0 = torch.stack([a, a]); return torch.stack([v0, v0])` of an empty "
        "a returns a tensor on a's storage under stock torch.compile (float32 too); eager's is new. No "
        "element can be read or written through it",
    },
    {
        "what": "reshape/flatten of a non-contiguous value, in programs that check gradients",
        "kinds": None,
        "reason": "PyTorch's AOTAutograd: `torch.sgn(torch.view_as_real(a).reshape(-1, 1))` of a transposed "
        "complex128 a requiring grad fails to compile under stock torch.compile (aot_eager too): 'Please "
        "convert all Tensors to FakeTensors first'; with a transposed float32 a, 'Attempted to call copy_() "
        "on an invalid python storage'",
    },
    {
        "what": "cumsum of a 0-dim value in programs with in-place ops",
        "kinds": None,
        "reason": "PyTorch's Inductor: `torch.cumsum(a.zero_(), dim=0)` of a 0-dim float32 a raises "
        "'IndexError: tuple index out of range' under stock torch.compile",
    },
    {
        "what": "in-place ops whose other operand is another view of the tensor written",
        "kinds": None,
        "reason": "PyTorch: `a.add_(a.diagonal(dim1=-2, dim2=-1))` reads elements the same op writes; "
        "eager's result follows its kernel's order, functionalization reads the operand first "
        "(aot_eager and stock torch.compile give the same values as torchcx). Found by the campaign "
        "of 2026-12-02, seed 5009",
    },
    {
        "what": "two computed outputs in programs that zero a value in place",
        "kinds": None,
        "reason": "PyTorch's Inductor: after `v1 = a.sum(); v1.zero_()`, it folds `v4 = v3 - v1` to v3 and "
        "returns one buffer for both outputs of `return v4, v3` (stock torch.compile too; eager's are "
        "distinct tensors). Found by the campaign of 2026-12-02, seed 5007",
    },
    {
        "what": ".real/.imag of a ComplexTensor used or returned after a graph break (explicit, or made by "
        "boolean-mask indexing: fuzzing run J, seed 23003)",
        "kinds": LOWP_KINDS,
        "reason": "limitations.md '.real/.imag of a ComplexTensor across a graph break': the part is an "
        "autograd view of the ComplexTensor, which Dynamo cannot rebuild for the next frame "
        "('view_as_real is only supported for complex tensors'); use z.re / z.im",
    },
    {
        "what": "sgn of a matrix product's result, in programs that check gradients",
        "kinds": None,
        "reason": "PyTorch's AOTAutograd: `torch.sgn(torch.einsum('...ij,...kj->...ik', a, a))` of a float32 "
        "a = randn(4, 3, 3)[1:] requiring grad fails to compile under stock torch.compile (aot_eager too): "
        "'Please convert all Tensors to FakeTensors first' (found by run E, seed 12010; real-only)",
    },
    {
        "what": "view_as_real of an empty complex value, in programs that check gradients",
        "kinds": None,
        "reason": "PyTorch's AOTAutograd: `torch.view_as_real(b * 2).sum(dim=-1)`, and `a.conj() - "
        "torch.view_as_real(b)`, of an empty complex b requiring grad fail to compile under stock "
        "torch.compile (aot_eager too): 'Tensor must have a last dimension with stride 1' in "
        "ViewAsRealBackward (found by run E, seed 13017, and run F, seed 15009)",
    },
    {
        "what": "in-place writes through a conj view of a cat/stack result, in programs that check gradients",
        "kinds": None,
        "reason": "PyTorch's functionalization: `v1 = torch.cat([b, c], dim=1); v1.conj().mul_(2j)` of b, c "
        "requiring grad fails under stock torch.compile (aot_eager too): 'view_as_real doesn't work on "
        "unresolved conjugated tensors' (`v1 = b * 1` compiles; found by run F, seed 14003)",
    },
    {
        "what": "in-place writes through a conj view of a value computed from a real tensor requiring grad, "
        "in programs that check gradients",
        "kinds": None,
        "reason": "PyTorch's functionalization: `v0 = a + (1+0j); v0.conj().mul_(1)` (also `a + c`, `a - 1j`, "
        "`a.to(torch.complex128)`, `torch.complex(a, a)`) of a float64 a requiring grad fails under stock "
        "torch.compile (aot_eager too): 'view_as_real doesn't work on unresolved conjugated tensors', raised "
        "where the backward takes the real part of the conj gradient for a (fuzzing run I, seed 21014)",
    },
    {
        "what": "values made by .real/.imag/view_as_real used after a write through a conj view",
        "kinds": None,
        "reason": "PyTorch's functionalization: `v0 = torch.view_as_real(a); a.conj().mul_(3); v0 - v0` fails "
        "under stock torch.compile (aot_eager too): view_as_real of an unresolved conjugate (found by run E, "
        "seed 13005; the entry above covers the values made after the write)",
    },
    {
        "what": "`abs() > 1` masks (masked_fill, boolean indexing, where) of a value whose modulus is within rounding of 1",
        "kinds": None,
        "reason": "the fuzzer's: which side of the threshold such an element falls on is decided by rounding. "
        "`sgn(c).masked_fill(sgn(c).abs() > 1, 3)` fills 4 of 12 elements eagerly (eager's sgn gives moduli "
        "of 1 + 1 ulp) and none under torchcx (moduli of 1 or 1 - 1 ulp); run K, seed 25011",
    },
    {
        "what": "ill-conditioned ops (div's denominator, log, sqrt, sgn, angle, ...) at a part that is zero up to rounding",
        "kinds": None,
        "reason": "the fuzzer's: `v0 = b / b; v1 = torch.view_as_real(v0); v1 / v1` is [1, nan] under torchcx, "
        "whose b / b has an imaginary part of exactly 0, and [1, 1] eagerly, whose division (Smith's "
        "algorithm) leaves 1e-17 there; neither is wrong by more than a rounding, and 0/0 then decides "
        "nan; run K, seed 24009",
    },
    {
        "what": "sigmoid of a complex value whose e^-z overflows (Re z below -log(finfo.max), Im z nonzero)",
        "kinds": None,
        "reason": "limitations.md 'Special values follow NumPy': eager (and NumPy's 1 / (1 + exp(-z))) "
        "gives nan there, torchcx e^z / (1 + e^z), about e^z: sigmoid(-721.19-170.59j) is nan eagerly and "
        "3.66e-314-5.0e-314j under torchcx, which is e^z to the last digit; run K, seed 24015",
    },
    {
        "what": "prod over a dim of values with nan/inf elements, in programs that check gradients",
        "kinds": None,
        "reason": "PyTorch's AOTAutograd (aot_eager and stock torch.compile alike): eager's prod backward "
        "gives nan to every element of a product that holds a nan, the compiled backward the product "
        "of the others (finite): `torch.log(a).prod(dim=-2)` of a float64 a with a negative element; "
        "run K, seed 25016",
    },
    {
        "what": "a diagonal of a diagonal returned with the value it views",
        "kinds": None,
        "reason": "PyTorch's Inductor (stock torch.compile, on float32 and int64 programs with no complex "
        "value; aot_eager keeps it): `v1 = a * a; return (v1.diagonal(dim1=-2, dim2=-1).diagonal(dim1=-2, "
        "dim2=-1), v1)` returns the first output in memory of its own, where eagerly it views v1 (one "
        "diagonal, or a diagonal with select, slice, mT or unsqueeze, keeps the aliasing); run K, seed 25007",
    },
    {
        "what": "masked_fill of a real tensor with a Python complex scalar",
        "kinds": None,
        "reason": "PyTorch: eager accepts b.masked_fill(mask, (1+0j)) for float b, Dynamo's fake tensors "
        "(aot_eager too) raise 'could not convert to type float'; not torchcx's",
    },
    {
        "what": "nan/inf inputs in programs that check gradients",
        "kinds": None,
        "reason": "PyTorch: where nan/inf reach a gradient depends on the backward formula, and compiled "
        "formulas differ from eager's: the gradient of prod([nan, 1+2j, ...]) is nan everywhere eagerly, "
        "finite at the nan under stock torch.compile (Inductor) and torchcx alike; found again through "
        "cumsum/mul_ of an -inf input. Special values are checked in the forward programs",
    },
    {
        "what": "the parts of non-finite complex results (compared by C99 class per element instead)",
        "kinds": None,
        "reason": "limitations.md 'Special values follow NumPy': eager's add computes b*alpha as a complex "
        "product, so (-inf+0j)+(-inf+0j) is (-inf+nanj) eagerly and (-inf+0j) in NumPy and torchcx",
    },
    {
        "what": "nan/inf input values with bfloat16/float16 parts",
        "kinds": LOWP_KINDS,
        "reason": "limitations.md 'Special values follow NumPy': special values are checked on native "
        "complex programs, where eager is the reference",
    },
]

#: Matrix products whose operands must share a dtype (see EXCLUSIONS).
SAME_DTYPE_OPS = {"matmul", "einsum", "vdot"}

#: Ops whose condition number is unbounded on the inputs' range (see EXCLUSIONS).
ILL_CONDITIONED = {"log", "sqrt", "reciprocal", "div", "angle", "sgn", "scalar_div", "rsqrt", "sigmoid", "tanh"}


@dataclass(frozen=True)
class Op:
    """An op: its source template over values ``{0}``, ``{1}``... and params ``{p}``, and what it does."""

    name: str
    arity: int
    template: str
    params: Callable[[Any, list[torch.Tensor]], dict[str, str]] | None = None
    inplace: bool = False  # writes its first argument (which may be an input or a view of one)
    value: bool = True  # the line assigns a new value
    needs_complex: bool = False


def _dim(draw: Any, xs: list[torch.Tensor]) -> dict[str, str]:
    n = max(xs[0].dim(), 1)
    return {"d": str(draw(st.integers(-n, n - 1)))}


def _dims2(draw: Any, xs: list[torch.Tensor]) -> dict[str, str]:
    n = max(xs[0].dim(), 1)
    return {"d": str(draw(st.integers(-n, n - 1))), "e": str(draw(st.integers(-n, n - 1)))}


#: Python complex (and real) scalars a program multiplies by or adds.
SCALARS = ("2j", "(0.5-1.5j)", "-1.0", "3", "(1+0j)", "0.25")


def _scalar(draw: Any, xs: list[torch.Tensor]) -> dict[str, str]:
    return {"c": draw(st.sampled_from(SCALARS))}


def _slice(draw: Any, xs: list[torch.Tensor]) -> dict[str, str]:
    return {"s": draw(st.sampled_from(("1:", "::2", ":-1", "..., 1:", "..., :1", "None")))}


def _index(draw: Any, xs: list[torch.Tensor]) -> dict[str, str]:
    return {"i": draw(st.sampled_from(("0", "-1", "1")))}


def _idx_tensor(draw: Any, xs: list[torch.Tensor]) -> dict[str, str]:
    return {"t": draw(st.sampled_from(("[0]", "[1, 0]", "[0, 0, 1]", "[-1]")))}


def _fft(draw: Any, xs: list[torch.Tensor]) -> dict[str, str]:
    n = max(xs[0].dim(), 1)
    extra = draw(st.sampled_from(("", ", norm='ortho'", ", n=3", ", n=1")))
    return {"d": str(draw(st.integers(-n, n - 1))), "x": extra}


OPS: dict[str, Op] = {
    op.name: op
    for op in [
        # pointwise
        Op("neg", 1, "-{0}"),
        Op("conj", 1, "{0}.conj()"),
        Op("conj_physical", 1, "torch.conj_physical({0})"),
        Op("exp", 1, "torch.exp({0})"),
        Op("log", 1, "torch.log({0})"),
        Op("sqrt", 1, "torch.sqrt({0})"),
        Op("sin", 1, "torch.sin({0})"),
        Op("tanh", 1, "torch.tanh({0})"),
        Op("sigmoid", 1, "torch.sigmoid({0})"),
        Op("reciprocal", 1, "torch.reciprocal({0})"),
        Op("rsqrt", 1, "torch.rsqrt({0})"),
        Op("abs", 1, "{0}.abs()"),
        Op("angle", 1, "torch.angle({0})"),
        Op("sgn", 1, "torch.sgn({0})"),
        Op("square", 1, "{0} * {0}"),
        Op("isfinite", 1, "torch.isfinite({0})"),
        Op("real", 1, "{0}.real", needs_complex=True),
        Op("imag", 1, "{0}.imag", needs_complex=True),
        Op("scalar_mul", 1, "{0} * {c}", _scalar),
        Op("scalar_add", 1, "{0} + {c}", _scalar),
        Op("scalar_rsub", 1, "{c} - {0}", _scalar),
        Op("scalar_div", 1, "{0} / {c}", _scalar),
        Op("add", 2, "{0} + {1}"),
        Op("sub", 2, "{0} - {1}"),
        Op("mul", 2, "{0} * {1}"),
        Op("div", 2, "{0} / {1}"),
        Op("make_complex", 2, "torch.complex({0}, {1})"),
        # reductions
        Op("sum_all", 1, "{0}.sum()"),
        Op("sum_dim", 1, "{0}.sum(dim={d})", _dim),
        Op("mean_dim", 1, "{0}.mean(dim={d}, keepdim=True)", _dim),
        Op("prod_dim", 1, "{0}.prod(dim={d})", _dim),
        Op("cumsum", 1, "torch.cumsum({0}, dim={d})", _dim),
        Op("vector_norm", 1, "torch.linalg.vector_norm({0})"),
        # matrix products
        Op("matmul_t", 1, "{0} @ {0}.mT"),
        Op("matmul", 2, "{0} @ {1}"),
        Op("einsum", 2, "torch.einsum('...ij,...kj->...ik', {0}, {1})"),
        Op("vdot", 2, "torch.vdot({0}.flatten(), {1}.flatten())"),
        # FFTs
        Op("fft", 1, "torch.fft.fft({0}, dim={d}{x})", _fft),
        Op("ifft", 1, "torch.fft.ifft({0}, dim={d}{x})", _fft),
        Op("fft2", 1, "torch.fft.fft2({0})"),
        Op("rfft", 1, "torch.fft.rfft({0}, dim={d}{x})", _fft),
        # views and indexing
        Op("transpose", 1, "{0}.transpose({d}, {e})", _dims2),
        Op("mT", 1, "{0}.mT"),
        Op("slice", 1, "{0}[{s}]", _slice),
        Op("select", 1, "{0}[{i}]", _index),
        Op("unsqueeze", 1, "{0}.unsqueeze({d})", _dim),
        Op("flatten", 1, "{0}.flatten()"),
        Op("reshape", 1, "{0}.reshape(-1, 1)"),
        Op("diagonal", 1, "{0}.diagonal(dim1=-2, dim2=-1)"),
        Op("expand", 1, "{0}.expand(2, *{0}.shape)"),
        Op("view_as_real", 1, "torch.view_as_real({0})", needs_complex=True),
        Op("view_as_complex", 1, "torch.view_as_complex({0})"),
        Op("index_tensor", 1, "{0}[torch.tensor({t})]", _idx_tensor),
        Op("index_select", 1, "{0}.index_select({d}, torch.tensor([0]))", _dim),
        Op("masked_fill", 1, "{0}.masked_fill({0}.abs() > 1, {c})", _scalar),
        Op("boolean_mask", 1, "{0}[{0}.abs() > 1]"),
        # cat / stack / where
        Op("cat", 2, "torch.cat([{0}, {1}], dim={d})", _dim),
        Op("stack", 2, "torch.stack([{0}, {1}])"),
        Op("where", 2, "torch.where({0}.abs() > 1, {0}, {1})"),
        Op("where_scalar", 1, "torch.where({0}.real > 0, {0}, {c})", _scalar),
        # in place, on inputs, views of inputs and intermediates
        Op("add_", 2, "{0}.add_({1})", inplace=True),
        Op("mul_", 2, "{0}.mul_({1})", inplace=True),
        Op("mul_scalar_", 1, "{0}.mul_({c})", _scalar, inplace=True),
        Op("copy_", 2, "{0}.copy_({1})", inplace=True),
        Op("zero_", 1, "{0}.zero_()", inplace=True),
        Op("exp_", 1, "{0}.exp_()", inplace=True),
        Op("slice_mul_", 1, "{0}[{s}].mul_({c})", lambda d, xs: _slice(d, xs) | _scalar(d, xs), inplace=True),
        Op("conj_mul_", 1, "{0}.conj().mul_({c})", _scalar, inplace=True),
        Op("setitem", 2, "{0}[{i}] = {1}", _index, inplace=True, value=False),
        # control
        Op("graph_break", 0, "torch._dynamo.graph_break()", value=False),
    ]
}

#: How many roundings an op contributes to the error bound (reductions and
#: products over at most 4 elements sum up to 4 terms; an FFT of up to 4 points
#: has 2 butterfly levels, each a sum and a twiddle product).
OP_WEIGHT = {
    "sum_all": 4,
    "sum_dim": 4,
    "mean_dim": 4,
    "prod_dim": 4,
    "cumsum": 4,
    "vector_norm": 4,
    "matmul_t": 4,
    "matmul": 4,
    "einsum": 4,
    "vdot": 4,
    "fft": 4,
    "ifft": 4,
    "fft2": 8,
    "rfft": 4,
}


@dataclass(frozen=True)
class InputSpec:
    """One input: its kind (c64, c128, bf16, f16, f32, f64, i64), shape and layout."""

    kind: str
    shape: tuple[int, ...]
    layout: str  # contiguous, transposed, offset, strided, conj, view_as_complex
    special: str | None = None  # "nan" / "inf" / "-inf": written into the first element's real part

    def source(self, name: str, grad: bool) -> str:
        s = self.shape
        shape = repr(s)  # torch.randn((), ...) is a 0-d tensor
        if self.kind in LOWP_KINDS:
            dt = {"bf16": "torch.bfloat16", "f16": "torch.float16"}[self.kind]
            parts = [f"torch.randn({shape}, generator=g).to({dt})" for _ in range(2)]
            if self.layout == "transposed":  # non-contiguous parts
                parts = [f"torch.randn({s[::-1]!r}, generator=g).to({dt}).mT" for _ in range(2)]
            return f"{name} = torchcx.complex({parts[0]}, {parts[1]})"
        if self.kind == "i64":
            expr = f"torch.randint(-3, 4, {shape}, generator=g)"
        else:
            dt = {"c64": "torch.complex64", "c128": "torch.complex128", "f32": "torch.float32", "f64": "torch.float64"}[
                self.kind
            ]
            if self.layout == "transposed":
                expr = f"torch.randn({s[::-1]!r}, dtype={dt}, generator=g).mT"
            elif self.layout == "offset":
                expr = f"torch.randn({(s[0] + 1, *s[1:])!r}, dtype={dt}, generator=g)[1:]"
            elif self.layout == "strided":
                expr = f"torch.randn({(2 * s[0], *s[1:])!r}, dtype={dt}, generator=g)[::2]"
            elif self.layout == "conj":
                expr = f"torch.randn({shape}, dtype={dt}, generator=g).conj()"
            elif self.layout == "view_as_complex":
                real = {"c64": "torch.float32", "c128": "torch.float64"}[self.kind]
                expr = f"torch.view_as_complex(torch.randn({(*s, 2)!r}, dtype={real}, generator=g))"
            else:
                expr = f"torch.randn({shape}, dtype={dt}, generator=g)"
        lines = f"{name} = {expr}"
        if self.special is not None and self.kind in ("c64", "c128", "f32", "f64") and math.prod(s) > 0:
            # Written through the view, as a user would (a conj view stores the conjugate).
            lines += f"\n{name}[{(0,) * len(s)}] = float('{self.special}')"
        if grad and self.kind in ("c64", "c128", "f32", "f64"):
            lines += f"\n{name}.requires_grad_()"
        return lines


@dataclass(frozen=True)
class Step:
    op: str
    args: tuple[str, ...]
    params: tuple[tuple[str, str], ...]
    out: str | None

    def source(self) -> str:
        op = OPS[self.op]
        expr = op.template.format(*self.args, **dict(self.params))
        return f"{self.out} = {expr}" if self.out is not None else expr


@dataclass
class Program:
    inputs: list[InputSpec]
    seed: int
    grad: bool
    steps: list[Step] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [chr(ord("a") + i) for i in range(len(self.inputs))]

    @property
    def lowp(self) -> bool:
        return any(i.kind in LOWP_KINDS for i in self.inputs)

    def make_inputs_source(self) -> str:
        body = [f"g = torch.Generator().manual_seed({self.seed})"]
        body += [spec.source(n, self.grad) for n, spec in zip(self.names, self.inputs)]
        body.append(f"return {', '.join(self.names)}{',' if len(self.names) == 1 else ''}")
        return "def make_inputs():\n" + "".join(f"    {line}\n" for line in "\n".join(body).split("\n"))

    def fn_source(self, steps: list[Step] | None = None, outputs: list[str] | None = None) -> str:
        steps = self.steps if steps is None else steps
        outputs = self.outputs if outputs is None else outputs
        body = [s.source() for s in steps]
        body.append(f"return ({', '.join(outputs)}{',' if len(outputs) == 1 else ''})")
        return f"def f({', '.join(self.names)}):\n" + "".join(f"    {line}\n" for line in body)

    def to_source(self) -> str:
        """The program as a module a user can paste: inputs, the function, and the call that compares."""
        return (
            "import torch\nimport torchcx\n\n\n"
            + self.make_inputs_source()
            + "\n\n"
            + self.fn_source()
            + "\n\n# eager: f(*make_inputs())   compiled: torchcx.compile(f)(*make_inputs())"
            + ("   (gradients checked)" if self.grad else "")
            + "\n"
        )

    def __repr__(self) -> str:
        return "\n" + self.to_source()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # Hypothesis prints a falsifying example with IPython's pretty printer,
        # which would show the dataclass fields instead of the program.
        printer.text(repr(self))

    @property
    def n_roundings(self) -> int:
        return 1 + sum(OP_WEIGHT.get(s.op, 1) for s in self.steps)


def _namespace(source: str) -> dict[str, Any]:
    ns: dict[str, Any] = {"torch": torch, "torchcx": torchcx}
    exec(compile(source, "<fuzz program>", "exec"), ns)  # noqa: S102 (the program is the test's own)
    return ns


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    # Generation runs thousands of candidate lines eagerly; their warnings
    # (complex32 is experimental, ...) are about eager PyTorch, not torchcx.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _values(ns: dict[str, Any], names: list[str]) -> list[tuple[str, Any]]:
    return [(n, ns[n]) for n in names if isinstance(ns.get(n), torch.Tensor)]


def _is_complex(t: torch.Tensor) -> bool:
    return isinstance(t, ComplexTensor) or t.is_complex()


def _allowed_ops(prog: Program) -> list[str]:
    ops = [name for name in OPS if name != "graph_break"]
    if prog.lowp:
        ops = [o for o in ops if o not in ILL_CONDITIONED and o != "view_as_real"]
    return ops + ["graph_break"]


def _eager_ok(prog: Program, steps: list[Step], outputs: list[str]) -> dict[str, Any] | None:
    """The eager namespace after ``steps`` (None if eager refuses them)."""
    # Run the body line by line in one namespace, so the values stay inspectable.
    ns = _namespace(prog.make_inputs_source())
    env: dict[str, Any] = {"torch": torch, "torchcx": torchcx}
    with _quiet():
        try:
            env.update(zip(prog.names, ns["make_inputs"]()))
            for s in steps:
                if s.op == "graph_break":
                    continue
                exec(s.source(), env)  # noqa: S102
            if prog.grad:  # (EXCLUSIONS: eager's backward must work on every value)
                loss = _loss([v for n, v in env.items() if n[0] == "v" and isinstance(v, torch.Tensor)])
                leaves = [env[n] for n in prog.names if env[n].requires_grad]
                if loss is not None and leaves:
                    torch.autograd.grad(loss, leaves, allow_unused=True)
        except Exception:
            return None
    return env


#: Ops eager computes as x + alpha * y with a complex alpha (see EXCLUSIONS).
ALPHA_OPS = {"add", "sub", "add_", "scalar_rsub"}

#: Transforms (see EXCLUSIONS).
FFT_OPS = {"fft", "ifft", "fft2", "rfft"}

#: Matrix products (see EXCLUSIONS).
GEMM_OPS = {"matmul_t", "matmul", "einsum"}

#: Ops that compare ``abs()`` with 1 (see EXCLUSIONS).
ABS_MASK_OPS = {"masked_fill", "boolean_mask", "where"}

#: Ops with a branch cut on the negative real axis (see EXCLUSIONS).
BRANCH_CUT_OPS = {"log", "sqrt", "rsqrt", "angle"}

#: Ops whose result is a view of their first argument.
VIEW_OPS = {"conj", "transpose", "mT", "slice", "select", "unsqueeze", "flatten", "reshape", "diagonal", "expand"}

#: Ops whose result is their argument itself when it is real (eager's conj_physical returns self):
#: followed like views by the chains below, which makes the exclusions that use them a little wider
#: for complex arguments (where the result is a copy).
REAL_IDENTITY_OPS = {"conj_physical"}


def _non_finite(t: torch.Tensor) -> bool:
    parts = (t.re, t.im) if isinstance(t, ComplexTensor) else (t,)
    return any(p.numel() and not bool(torch.isfinite(p).all()) for p in parts)


def _float_parts(t: Any) -> tuple[torch.Tensor, ...]:
    """The real tensors a value's elements are made of (none for integers and booleans)."""
    if isinstance(t, ComplexTensor):
        return (t.re.detach(), t.im.detach())
    if isinstance(t, torch.Tensor) and t.is_complex():
        return (t.detach().real, t.detach().imag)
    if isinstance(t, torch.Tensor) and t.is_floating_point():
        return (t.detach(),)
    return ()


def _rounding_margin(parts: tuple[torch.Tensor, ...]) -> float:
    """A few roundings of the value's largest finite part: two computations of it that differ by
    their rounding order may differ by this much (16 eps of the parts' dtype)."""
    finite = [q[torch.isfinite(q)].abs() for q in parts]
    scale = max((float(q.max()) for q in finite if q.numel()), default=0.0)
    return 16 * torch.finfo(parts[0].dtype).eps * scale


def _zero_up_to_rounding(t: Any) -> bool:
    """Whether a part of an element of ``t`` is nonzero but within rounding of zero, relative to
    the value's largest part (``(b / b).imag``: eager's division leaves 1e-17 where torchcx's is 0;
    see EXCLUSIONS)."""
    parts = _float_parts(t)
    if not parts or not all(q.numel() for q in parts):
        return False
    margin = _rounding_margin(parts)
    return any(bool(((q != 0) & (q.abs() <= margin)).any()) for q in parts)


def _modulus_near_one(t: Any) -> bool:
    """Whether an element's modulus is within rounding of 1, where ``abs() > 1`` decides by
    rounding (``sgn``'s results: see EXCLUSIONS)."""
    parts = _float_parts(t)
    if not parts or not all(q.numel() for q in parts):
        return False
    modulus = torch.hypot(*parts) if len(parts) == 2 else parts[0].abs()
    return bool(((modulus - 1).abs() <= 16 * torch.finfo(parts[0].dtype).eps).any())


def _sigmoid_overflows(t: Any) -> bool:
    """Whether sigmoid's e^-z overflows at an element with a nonzero imaginary part (see EXCLUSIONS)."""
    if not (isinstance(t, torch.Tensor) and t.is_complex()) or not t.numel():
        return False
    re, im = t.detach().real, t.detach().imag
    return bool(((re < -math.log(torch.finfo(re.dtype).max)) & (im != 0)).any())


def _view_chain(prog: Program, name: str) -> tuple[list[str], str]:
    """The ops of the chain of views value ``name`` is made by (outermost first), and the value
    the chain starts from (``name`` itself if it is no view)."""
    made = {s.out: s for s in prog.steps if s.out is not None}
    ops = []
    while name in made and made[name].op in VIEW_OPS | REAL_IDENTITY_OPS:
        ops.append(made[name].op)
        name = made[name].args[0]
    return ops, name


def _part_across_break(prog: Program, name: str) -> bool:
    """Whether value ``name`` is (a view of) .real/.imag made before a graph break, explicit or
    made by boolean-mask indexing (a data-dependent shape; fuzzing run J, seed 23003), in the
    program so far (see EXCLUSIONS)."""
    made = {s.out: i for i, s in enumerate(prog.steps) if s.out is not None}
    while name in made and prog.steps[made[name]].op in VIEW_OPS | REAL_IDENTITY_OPS | {"real", "imag"}:
        step = prog.steps[made[name]]
        if step.op in ("real", "imag"):
            return any(s.op in ("graph_break", "boolean_mask") for s in prog.steps[made[name] + 1 :])
        name = step.args[0]
    return False


def _memory_origin(prog: Program, name: str) -> str:
    """The value whose memory ``name`` is: through views, identities and in-place results (an in-place
    op returns the tensor it writes)."""
    made = {s.out: s for s in prog.steps if s.out is not None}
    while name in made and (made[name].op in VIEW_OPS | REAL_IDENTITY_OPS or OPS[made[name].op].inplace):
        name = made[name].args[0]
    return name


def _written_conj(prog: Program, name: str) -> bool:
    """Whether value ``name`` is an in-place result whose target is (a view of) a conj view
    (``v0 = a.conj(); v1 = v0.mul_(0.25)``; see EXCLUSIONS: conj of a ComplexTensor returned)."""
    made = {s.out: s for s in prog.steps if s.out is not None}
    while name in made and OPS[made[name].op].inplace:
        name = made[name].args[0]
    return name in made and _views(prog, name, {"conj", "conj_mul_"})


def _views(prog: Program, name: str, ops: set[str]) -> bool:
    """Whether value ``name`` is (a view of) the result of one of ``ops`` (see EXCLUSIONS)."""
    chain, origin = _view_chain(prog, name)
    made = {s.out: s for s in prog.steps if s.out is not None}
    return any(op in ops for op in chain) or (origin in made and made[origin].op in ops)


def _view_after_break_of_offset_input(prog: Program, name: str) -> bool:
    """Whether value ``name`` is a view of an offset input, in a program with a graph break (see EXCLUSIONS)."""
    chain, origin = _view_chain(prog, name)
    offset = {n for n, i in zip(prog.names, prog.inputs) if i.layout == "offset"}
    # boolean_mask breaks the graph too (a data-dependent shape)
    return bool(chain) and origin in offset and any(s.op in ("graph_break", "boolean_mask") for s in prog.steps)


def _write_after_break_to_viewed_input(prog: Program, name: str) -> bool:
    """Whether writing value ``name`` writes an input that another value is a view of, in a program
    with a graph break (see EXCLUSIONS)."""
    if not any(s.op in ("graph_break", "boolean_mask") for s in prog.steps):
        return False
    origin = _memory_origin(prog, name)
    if origin not in prog.names:
        return False
    return any(
        s.out is not None and s.out != name and _memory_origin(prog, s.out) == origin and _passes_a_view(prog, s.out)
        for s in prog.steps
    )


def _passes_a_view(prog: Program, name: str) -> bool:
    """Whether value ``name`` is made from its memory's origin through a view (an in-place op on
    a view, ``conj_mul_``, included)."""
    made = {s.out: s for s in prog.steps if s.out is not None}
    while name in made and (made[name].op in VIEW_OPS | REAL_IDENTITY_OPS or OPS[made[name].op].inplace):
        if made[name].op in VIEW_OPS or made[name].op == "conj_mul_":
            return True
        name = made[name].args[0]
    return False


def _write_after_break_of_viewed_pairs_input(prog: Program, name: str) -> bool:
    """Whether writing value ``name`` writes a view_as_complex input that two values alias, in a
    program with a graph break (see EXCLUSIONS): the input and a view of it, whichever is written
    (``c.mul_`` with ``c[0]`` read, run I, seed 20003; ``a.conj().mul_(3)`` written again with ``a``
    read, run K, seed 25007), or ``.real``/``.imag`` of it (run J, seed 22016)."""
    origin = _memory_origin(prog, name)
    pairs = {n for n, i in zip(prog.names, prog.inputs) if i.layout == "view_as_complex"}
    if origin not in pairs or not any(s.op in ("graph_break", "boolean_mask") for s in prog.steps):
        return False
    if _passes_a_view(prog, name):  # the input itself is the other alias (any later step may read it)
        return True

    def views_origin(other: str) -> bool:
        return _views_through_parts(prog, other) == origin or (
            _memory_origin(prog, other) == origin and _passes_a_view(prog, other)
        )

    return any(s.out is not None and s.out != name and views_origin(s.out) for s in prog.steps)


def _views_through_parts(prog: Program, name: str) -> str | None:
    """The value ``name`` is a view of, through views and .real/.imag (None if it is no view):
    ``a.imag`` of a view_as_complex input views it as much as ``a[0]`` does (run J, seed 22016)."""
    made = {s.out: s for s in prog.steps if s.out is not None}
    viewed = False
    while name in made and made[name].op in VIEW_OPS | {"real", "imag"}:
        name, viewed = made[name].args[0], True
    return name if viewed else None


def _part_of_inplace_result(prog: Program, name: str) -> bool:
    """Whether value ``name`` is (a view of) .real/.imag of (a view of) an in-place op's result (see EXCLUSIONS)."""
    made = {s.out: s for s in prog.steps if s.out is not None}
    while name in made and made[name].op in VIEW_OPS | {"real", "imag"}:
        step = made[name]
        name = step.args[0]
        if step.op in ("real", "imag"):
            origin = _view_origin(prog, name)
            return origin in made and OPS[made[origin].op].inplace
    return False


def _has_real_grad_operand(env: dict[str, Any], step: Step) -> bool:
    """Whether a tensor operand of ``step`` is real (floating) and requires grad (see EXCLUSIONS)."""
    operands = [env.get(a) for a in step.args]
    return any(isinstance(t, torch.Tensor) and t.is_floating_point() and t.requires_grad for t in operands)


def _view_origin(prog: Program, name: str) -> str:
    return _view_chain(prog, name)[1]


def _has_conj(prog: Program) -> bool:
    """Whether the program so far has a conjugate view (an input's layout or a step)."""
    return any(i.layout == "conj" for i in prog.inputs) or any(s.op in ("conj", "conj_mul_") for s in prog.steps)


def _conj_mutated(prog: Program) -> bool:
    """Whether the program so far may have written through a conjugate view (see EXCLUSIONS)."""
    return _has_conj(prog) and any(OPS[s.op].inplace for s in prog.steps)


@st.composite
def input_specs(draw: Any, grad: bool, allow_lowp: bool) -> InputSpec:
    kinds = NATIVE_KINDS * 3 + REAL_KINDS + (LOWP_KINDS if allow_lowp and not grad else ())
    kind = draw(st.sampled_from(kinds))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
    layouts = ["contiguous"]
    if len(shape) >= 2:
        layouts.append("transposed")
    if kind in NATIVE_KINDS + ("f32", "f64") and len(shape) >= 1:
        layouts += ["offset", "strided"]
    if kind in NATIVE_KINDS:
        layouts += ["conj", "view_as_complex"]
    layout = draw(st.sampled_from(layouts))
    special = None
    if kind not in LOWP_KINDS and not grad and draw(st.integers(0, 5)) == 0:  # (EXCLUSIONS)
        special = draw(st.sampled_from(("nan", "inf", "-inf")))
    return InputSpec(kind, shape, layout, special)


@st.composite
def programs(draw: Any, max_steps: int = 6) -> Program:
    """A random straight-line program over 1-3 inputs with 2-6 steps that eager runs."""
    grad = draw(st.integers(0, 2)) == 0  # a third of the programs check gradients
    n_inputs = draw(st.integers(1, 3))
    allow_lowp = draw(st.integers(0, 3)) == 0
    specs = [draw(input_specs(grad, allow_lowp)) for _ in range(n_inputs)]
    if any(s.kind in LOWP_KINDS for s in specs):
        # (EXCLUSIONS: special values are checked on native programs)
        specs = [InputSpec(s.kind, s.shape, s.layout, None) for s in specs]
    prog = Program(specs, draw(st.integers(0, 2**16 - 1)), grad)
    env = _eager_ok(prog, [], [])
    if env is None:  # an input eager cannot make (cannot happen; keep generation total)
        env = {}
    ops = _allowed_ops(prog)
    value_names = list(prog.names)
    n_steps = draw(st.integers(2, max_steps))
    for k in range(n_steps):
        for _attempt in range(4):
            name = draw(st.sampled_from(ops))
            op = OPS[name]
            vals = _values(env, value_names)
            if not vals and op.arity:
                break
            args = [draw(st.sampled_from([n for n, _ in vals])) for _ in range(op.arity)]
            if op.needs_complex and not _is_complex(env[args[0]]):
                continue
            if name in SAME_DTYPE_OPS and any(env[a].dtype == torch.bool for a in args):
                continue  # (EXCLUSIONS)
            if name == "masked_fill" and not _is_complex(env[args[0]]):
                continue  # (EXCLUSIONS)
            if name in ABS_MASK_OPS and _modulus_near_one(env[args[0]]):
                continue  # (EXCLUSIONS: a mask decided by rounding)
            sensitive = args[1:] if name == "div" else args  # (a numerator's zeros are harmless)
            if name in ILL_CONDITIONED and any(_zero_up_to_rounding(env[a]) for a in sensitive):
                continue  # (EXCLUSIONS: an ill-conditioned op at a zero made by rounding)
            if name == "sigmoid" and _sigmoid_overflows(env[args[0]]):
                continue  # (EXCLUSIONS: sigmoid where eager's e^-z overflows)
            if prog.grad and name == "prod_dim" and _non_finite(env[args[0]]):
                continue  # (EXCLUSIONS: prod's gradient at nan/inf elements)
            if name in SAME_DTYPE_OPS and len({env[a].dtype for a in args}) > 1:
                continue  # (EXCLUSIONS)
            if name in ("real", "imag", "view_as_real", "isfinite", "where_scalar") and _conj_mutated(prog):
                continue  # (EXCLUSIONS)
            if _conj_mutated(prog) and any(_views(prog, a, {"real", "imag", "view_as_real"}) for a in args):
                continue  # (EXCLUSIONS: values made by .real/.imag/view_as_real, used after a conj write)
            made = {s_.out: s_ for s_ in prog.steps if s_.out is not None}
            origin_step = made.get(_memory_origin(prog, args[0])) if args else None
            if prog.grad and name == "sgn" and origin_step is not None and origin_step.op in GEMM_OPS:
                continue  # (EXCLUSIONS: sgn of a matrix product's result)
            if prog.grad and name == "view_as_real" and env[args[0]].numel() == 0:
                continue  # (EXCLUSIONS: view_as_real of an empty value, with gradients)
            if prog.grad and name == "conj_mul_" and origin_step is not None and origin_step.op in ("cat", "stack"):
                continue  # (EXCLUSIONS: a write through a conj view of a cat result, with gradients)
            if (
                prog.grad
                and name == "conj_mul_"
                and origin_step is not None
                and _has_real_grad_operand(env, origin_step)
            ):
                continue  # (EXCLUSIONS: a write through a conj view of a value promoted from a real input)
            if op.inplace and _has_conj(prog) and any(s_.op in ("real", "imag") for s_ in prog.steps):
                continue  # (EXCLUSIONS: an in-place op after .real/.imag, with conj views)
            origin = _view_origin(prog, args[0]) if op.inplace else None
            if any(n == origin and i.kind == "f64" and not i.shape for n, i in zip(prog.names, prog.inputs)):
                continue  # (EXCLUSIONS)
            tensors = [env[a] for a in args]
            if name in ALPHA_OPS and any(_is_complex(t) for t in tensors) and any(_non_finite(t) for t in tensors):
                continue  # (EXCLUSIONS)
            if name in FFT_OPS and any(_non_finite(t) for t in tensors):
                continue  # (EXCLUSIONS)
            if name in GEMM_OPS and any(_is_complex(t) for t in tensors) and any(_non_finite(t) for t in tensors):
                continue  # (EXCLUSIONS)
            if name in BRANCH_CUT_OPS and any(s_.op in FFT_OPS for s_ in prog.steps):
                continue  # (EXCLUSIONS: signed zeros of FFT outputs)
            if op.inplace and _views(prog, args[0], {"expand"}):
                continue  # (EXCLUSIONS)
            if op.inplace and _view_after_break_of_offset_input(prog, args[0]):
                continue  # (EXCLUSIONS)
            if op.inplace and _write_after_break_to_viewed_input(prog, args[0]):
                continue  # (EXCLUSIONS: a write after a break to an input another value views)
            if op.inplace and _write_after_break_of_viewed_pairs_input(prog, args[0]):
                continue  # (EXCLUSIONS)
            if (
                name in ("setitem", "copy_")
                and not (tensors[0].is_floating_point() or _is_complex(tensors[0]))
                and tensors[1].requires_grad
            ):
                continue  # (EXCLUSIONS: a value requiring grad written into an integer tensor)
            if op.inplace and any(a != args[0] and _view_origin(prog, a) == origin for a in args[1:]):
                continue  # (EXCLUSIONS: an operand that is another view of the tensor written)
            if prog.grad and name in ("reshape", "flatten") and not env[args[0]].is_contiguous():
                continue  # (EXCLUSIONS)
            if name == "cumsum" and env[args[0]].dim() == 0 and any(OPS[s_.op].inplace for s_ in prog.steps):
                continue  # (EXCLUSIONS)
            if prog.lowp and any(_part_across_break(prog, a) for a in args):
                continue  # (EXCLUSIONS: .real/.imag of a ComplexTensor used after a graph break)
            if op.inplace and prog.lowp and _views(prog, args[0], {"real", "imag"}):
                continue  # (EXCLUSIONS)
            if (
                op.inplace
                and prog.lowp
                and _has_conj(prog)
                and any(s_.op in ("graph_break", "boolean_mask") for s_ in prog.steps)
            ):
                continue  # (EXCLUSIONS: a write after a graph break in a ComplexTensor program with conj views)
            params = tuple(sorted(op.params(draw, tensors).items())) if op.params else ()
            out = f"v{k}" if op.value else None
            step = Step(name, tuple(args), params, out)
            new_env = _eager_ok(prog, [*prog.steps, step], [])
            if new_env is None:
                continue
            prog.steps.append(step)
            env = new_env
            if out is not None:
                value_names.append(out)
            break
    candidates = [n for n, _ in _values(env, value_names)]
    # Outputs: the last value always, plus up to two more (inputs included, repeats allowed),
    # so outputs alias inputs and each other.
    last = [n for n in candidates if n.startswith("v")][-1:] or candidates[:1]
    more = draw(st.lists(st.sampled_from(candidates), max_size=2)) if candidates else []
    outputs = last + more
    if any(s_.op == "zero_" for s_ in prog.steps):  # (EXCLUSIONS: two computed outputs after zero_)
        outputs = last + [o for o in more if not o.startswith("v")]
    if prog.lowp:  # (EXCLUSIONS: conj of a ComplexTensor returned; .real/.imag of an in-place result)
        outputs = [o for o in outputs if not _views(prog, o, {"conj", "conj_mul_"}) and not _written_conj(prog, o)]
        outputs = [o for o in outputs if not _part_of_inplace_result(prog, o)]
        outputs = [o for o in outputs if not _part_across_break(prog, o)]  # (.real/.imag returned after a break)
        if any(OPS[s_.op].inplace for s_ in prog.steps):  # (conj_physical of a part of a written input)
            outputs = [
                o
                for o in outputs
                if not (_views(prog, o, {"real", "imag"}) and "conj_physical" in _view_chain(prog, o)[0])
            ]
    if _conj_mutated(prog):  # (EXCLUSIONS: .real/.imag/view_as_real and in-place ops on conj views)
        outputs = [o for o in outputs if not _views(prog, o, {"real", "imag", "view_as_real"})]
    # (EXCLUSIONS: a diagonal of a diagonal returned)
    outputs = [o for o in outputs if _view_chain(prog, o)[0].count("diagonal") < 2]
    prog.outputs = outputs or prog.names[:1]
    return prog


# --- the comparison ---------------------------------------------------------------------------------


def _parts(t: torch.Tensor) -> torch.Tensor:
    t = to_comparable(t.detach())
    if t.is_complex():
        return torch.view_as_real(t.resolve_conj())
    return t


def _c99_class(t: torch.Tensor) -> torch.Tensor:
    """Per element: 0 finite, 1 nan, 2 infinite (C99 Annex G: a complex value with an infinite part is infinite)."""
    p = _parts(t)
    if t.is_complex() or isinstance(t, ComplexTensor):
        inf, nan = p.isinf().any(-1), p.isnan().any(-1)
        return torch.where(inf, 2, torch.where(nan, 1, 0))
    # Real values: exact, with the sign of infinity.
    return torch.where(p.isnan(), 1, torch.where(p.isposinf(), 2, torch.where(p.isneginf(), 3, 0)))


def assert_close_special(actual: Any, expected: Any, rtol: float, atol: float) -> None:
    """``assert_values`` (compile_harness), with nan and inf at the same positions exactly.

    Real values: nan, +inf and -inf at the same positions. Complex values: the
    same C99 class (finite, nan, infinite) per element, and the parts of
    non-finite elements are not compared (limitations.md 'Special values follow
    NumPy': eager's kernels give e.g. (-inf+nanj) for -inf+(-inf+0j)*(1+0j)'s
    alpha product where NumPy and torchcx give (-inf+0j)); see EXCLUSIONS.
    """
    a, spec = tree_flatten(actual)
    e, _ = tree_flatten(expected)
    assert len(a) == len(e), f"{len(a)} outputs, expected {len(e)}"
    a2, e2 = list(a), list(e)
    for i, (x, y) in enumerate(zip(a, e)):
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)) or x.shape != y.shape:
            continue
        if not (x.is_floating_point() or x.is_complex() or isinstance(x, ComplexTensor)):
            continue
        cx, cy = _c99_class(x), _c99_class(y)
        assert torch.equal(cx, cy), f"nan/inf positions differ:\n{x}\nvs eager\n{y}"
        if (x.is_complex() and y.is_complex()) and bool((cx > 0).any()):
            mask = cx > 0
            if isinstance(x, ComplexTensor) or isinstance(y, ComplexTensor):
                # as native complex128 (exact for every part dtype), the part dtype checked here
                assert (x.re.dtype, x.im.dtype) == (y.re.dtype, y.im.dtype), f"{x.re.dtype} vs eager {y.re.dtype}"
                x, y = (torch.complex(t.re.detach().double(), t.im.detach().double()) for t in (x, y))
            xx, yy = x.detach().resolve_conj().clone(), y.detach().resolve_conj().clone()
            xx[mask], yy[mask] = 0, 0
            a2[i] = xx.requires_grad_(x.requires_grad)
            e2[i] = yy.requires_grad_(y.requires_grad)
    assert_values(a2, e2, rtol, atol)


def output_aliasing(outputs: Any) -> list[tuple[int, ...]]:
    """For each output: the earlier outputs it shares memory with (a ComplexTensor: either part).

    compile_harness.output_alias_map compares each part of a ComplexTensor on
    its own, so whether a fresh result's re and im share one buffer (its
    layout, which the contract leaves open: eager's bfloat16 matmul makes two
    buffers, the compiled one an interleaved pair) reads as aliasing there.
    """
    found = [
        {s for s, _ in storages(o)} if o.numel() else set()  # (EXCLUSIONS: empty outputs)
        for o in tree_flatten(outputs)[0]
        if isinstance(o, torch.Tensor)
    ]
    return [tuple(j for j in range(i) if found[i] & found[j]) for i in range(len(found))]


def input_aliasing(outputs: Any, inputs: Any) -> list[Any]:
    """compile_harness.alias_map, with empty outputs aliasing nothing (see EXCLUSIONS)."""
    empty = [t.numel() == 0 for _, t in storages(outputs)]
    return [((), ()) if e else entry for e, entry in zip(empty, alias_map(outputs, inputs))]


def _intermediates(prog: Program) -> list[torch.Tensor]:
    """Every value an eager run of ``prog`` computes."""
    env = _eager_ok(prog, prog.steps, []) or {}
    return [v for n, v in env.items() if n[0] == "v" and isinstance(v, torch.Tensor)]


def _magnitude(*trees: Any) -> float:
    """The largest finite magnitude among the given values (the scale of absolute rounding errors)."""
    m = 1.0
    for t in tree_flatten(trees)[0]:
        if isinstance(t, torch.Tensor) and t.numel():
            p = _parts(t).double().abs()
            p = p[torch.isfinite(p)]
            if p.numel():
                m = max(m, p.max().item())
    return m


def tolerances(prog: Program, scale: float) -> tuple[float, float]:
    """(rtol, atol) from error analysis, for a program of ``prog.n_roundings`` roundings.

    Native complex: torch.testing.assert_close's defaults per op (complex64
    1.3e-6 / 1e-5, complex128 1e-7 / 1e-7), times the number of roundings,
    with atol relative to the program's largest magnitude (a sum that cancels
    keeps its operands' absolute error; with bfloat16/float16 parts, the largest
    intermediate's too: ``run_program``). Parts of bfloat16/float16: each op
    rounds once (relative error u per part; a complex product or sum of parts
    adds at most 2u), eager and compiled each carry such an error, and the
    ops admitted are well-conditioned (EXCLUSIONS): 2 * 2u per rounding.
    """
    k = prog.n_roundings
    kinds = {i.kind for i in prog.inputs}
    if kinds & {"bf16"}:
        u = 2.0**-8
        return 4 * u * k, 4 * u * k * scale
    if kinds & {"f16"}:
        u = 2.0**-11
        return 4 * u * k, 4 * u * k * scale
    if kinds <= {"c128", "f64", "i64"}:
        return 1e-7 * k, 1e-7 * k * scale
    return 1.3e-6 * k, 1e-5 * k * scale


def _loss(outputs: Any) -> torch.Tensor | None:
    """A real loss that weighs every element and both parts differently (so each reaches the gradient)."""
    total = None
    for o in tree_flatten(outputs)[0]:
        if not isinstance(o, torch.Tensor) or not o.requires_grad:
            continue
        w = torch.arange(o.numel(), dtype=torch.float64).reshape(o.shape) * 0.1 + 0.5
        if o.is_complex():
            part = (o * torch.complex(w, -0.3 * w).to(o.dtype)).real.sum()
        else:
            part = (o * w.to(o.dtype)).sum()
        part = part.double()  # (a complex128 output's loss must not be rounded to float32)
        total = part if total is None else total + part
    return total


def run_program(prog: Program) -> None:
    """Run ``prog`` eagerly and under torchcx.compile on identical fresh inputs, and compare everything."""
    source = prog.to_source()
    ns = _namespace(source)
    fn, make_inputs = ns["f"], ns["make_inputs"]  # a fresh function object per program: no stale guards
    torch._dynamo.reset()
    eager_in, compiled_in = make_inputs(), make_inputs()
    compiled = torchcx.compile(fn)
    with _quiet(), record_inductor_graphs() as recorder:
        expected = fn(*eager_in)
        actual = compiled(*compiled_in)
    # (low precision: eager rounds every intermediate to the parts' dtype, Inductor keeps float32
    # inside a fused kernel, as for real float16 tensors; the difference is the rounding of the
    # largest value computed, which ``sin(exp(3 * x))`` carries to its result: fuzzing run J,
    # seed 22004, the same under stock torch.compile)
    scale = _magnitude(expected, eager_in, _intermediates(prog) if prog.lowp else [])
    rtol, atol = tolerances(prog, scale)
    assert_close_special(actual, expected, rtol, atol)
    assert_close_special(compiled_in, eager_in, rtol, atol)  # mutations of inputs
    assert input_aliasing(actual, compiled_in) == input_aliasing(expected, eager_in), (
        "aliasing with inputs differs from eager"
    )
    assert output_aliasing(actual) == output_aliasing(expected), "aliasing among outputs differs from eager"
    assert not recorder.complex_nodes, f"complex values reached Inductor: {recorder.complex_nodes}"
    if not prog.grad:
        return
    e_loss, c_loss = _loss(expected), _loss(actual)
    if e_loss is None:
        assert c_loss is None, "compiled outputs require grad where eager's do not"
        return
    leaves = [t for t in eager_in if t.requires_grad]
    c_leaves = [t for t in compiled_in if t.requires_grad]
    with _quiet():
        e_grads = torch.autograd.grad(e_loss, leaves, allow_unused=True)
        c_grads = torch.autograd.grad(c_loss, c_leaves, allow_unused=True)
    # PyTorch's AOTAutograd (stock torch.compile too) may give zeros for an input that eager's
    # graph leaves unused (an in-place op on a view of an intermediate no output depends on)
    c_grads = tuple(None if e is None and c is not None and _all_zero(c) else c for e, c in zip(e_grads, c_grads))
    assert [g is None for g in c_grads] == [g is None for g in e_grads], "which inputs get a gradient differs"
    e_grads = [g for g in e_grads if g is not None]
    c_grads = [g for g in c_grads if g is not None]
    rtol, atol = tolerances(prog, max(scale, _magnitude(e_grads)))
    assert_close_special(c_grads, e_grads, 2 * rtol, 2 * atol)  # backward: as many roundings again


def _all_zero(t: torch.Tensor) -> bool:
    return not bool((to_comparable(t.detach()) != 0).any())


def budget(default: int) -> int:
    return int(os.environ.get(EXAMPLES_ENV, default))


def seed() -> int | None:
    value = os.environ.get(SEED_ENV)
    return int(value) if value is not None else None
