"""Linear algebra: the matmul family on real GEMMs, convolutions, and LAPACK ops as extern kernels.

Note [Complex GEMM strategies]
------------------------------
Every product-shaped op here (mm, bmm, mv, dot, vdot, addmm, baddbmm, addbmm,
addmv, addr, convolution, cross) is bilinear, so its complex product is a
combination of *real* products of the parts. ``complex_bilinear`` is the one
place that decides how for any bilinear function; the GEMM-shaped ops reach
it through ``complex_matmul``, which adds the strategies that need a GEMM's
shape. ``strategy`` names the decomposition of C = AB:

* ``"4m"``: (Ar + iAi)(Br + iBi) = (ArBr - AiBi) + i(ArBi + AiBr).
  Four real products, each as accurate as a real product. Each part is read
  by two of them, so ``complex_matmul`` fixes a layout BLAS cannot read
  (stride-2 parts of an interleaved tensor, a neg bit) once per part.
* ``"3m"`` (Gauss): T1 = ArBr, T2 = AiBi, T3 = (Ar + Ai)(Br + Bi);
  re = T1 - T2, im = T3 - T1 - T2. A quarter fewer products for two operand
  additions, but im is computed by cancellation: its error is relative to
  (|Ar| + |Ai|)(|Br| + |Bi|), not to |im|, so it is large where |ArBi + AiBr|
  is much smaller than that (badly scaled parts, nearly real or nearly
  imaginary products). docs/linalg.md has the measured error table.
* ``"block"``: one real GEMM on a block matrix,
  [[Ar, -Ai], [Ai, Ar]] @ [Br; Bi] = [Cr; Ci], or, when B is the smaller
  operand, [Ar, Ai] @ [[Br, Bi], [-Bi, Br]] = [Cr, Ci]. The same flops as 4M in
  one call on contiguous operands (building the block is one pass, which
  Inductor fuses into the kernel that unpacks or computes the operands), and
  for float16/bfloat16 parts each output part is accumulated in float32 and
  rounded once.
* ``"native"``: the vendor's complex GEMM (MKL/cuBLAS cgemm, zgemm) on
  interleaved data, as an extern kernel (Note [Extern kernels]): in a
  compiled graph a graph input crosses into it without a copy and the
  unpacking of its result fuses into the next kernel. Only for float32 and
  float64 parts; elsewhere the rule's choice among the others is used.

A real operand has no imaginary part: two real products, whatever the
strategy ("block" stacks them into one GEMM: [Ar; Ai] @ Br, Ar @ [Br, Bi]),
and a conjugated operand (vdot) only flips signs in the combination.

Note [GEMM strategy rule]
-------------------------
``torchcx.config.matmul_strategy`` ("auto" by default) or a ``strategy``
argument names a strategy for every product; "auto" asks ``gemm_strategy``,
which decides per device, part dtype and shape (m x k @ k x n, batch b),
from the measurements of benchmarks/gemm_strategies.py (results under
benchmarks/results/, summary in docs/linalg.md):

* On CPU, compiled, float32/float64 parts: "native". MKL's cgemm/zgemm is as
  fast as the best real scheme, and it reads interleaved graph inputs and
  writes interleaved outputs with no copy (Note [Packed form]). Except
  "block" for small products (b*m*k*n < 2^17: the extern call's fixed cost
  dominates). Skinny products (k <= 16, or one operand 8x smaller than the
  other) whose operands the graph computes used to take "block" too (a 1.8x
  gain for the suite's quantum gates on the 2-core Xeon, which now take Note
  [Small contractions in place] instead); measured again on the AMD EPYC
  (Zen 4, benchmarks/skinny_products.py, block / native): a 2x2 gate on 2^17
  amplitudes 1.26x, a 4x4 gate 1.32x, a state 2^16x4 @ 4x4 2.38x, the FNO
  step's weight gradients (256 of 32x8 @ 8x32) 1.80x (the step 1.12x), 64x16
  @ 16x4096 1.09x, 256 of 16x16 1.31x; an outer product 1024x8 @ 8x1024
  0.95x (the block 5% faster; an earlier run read 5.4x the other way).
* On CPU, eager, float32/float64 parts: "native" when both operands are
  interleaved (a native complex tensor's memory: eager's own kernel, no copy);
  otherwise "4m" for matrix-vector shapes (m or n = 1: the block would copy
  the matrix for a vector of output) and large products, "block" for skinny
  or small ones (b*m*k*n <= 2^18: one call instead of four).
* On CPU, float16/bfloat16 parts (no vendor complex GEMM): "4m" for
  matrix-vector shapes; "block" for skinny or small products, and in eager
  mode for all others too (one GEMM, one rounding); compiled, "4m" for large
  products, which read the planar parts directly.
* Other devices are not measured yet: "native" for float32/float64 (the
  kernel eager uses), "4m" otherwise.

Sizes are read from the shapes' hints when they are symbolic (a choice
adds no guard; a size that crosses a threshold keeps its strategy).
"3m" is never chosen: on nearly real (or nearly imaginary) inputs its error
is about 1000x eager's for float32/float64 parts and 35-46x for
float16/bfloat16 ones (docs/linalg.md), beyond the 4x we allow; it runs only
when asked for.

Float16/bfloat16 parts: the real products run in the part dtype (torch's
CPU and CUDA GEMMs accumulate those in float32 and round once), their
combination and the alpha/beta scaling in float32, and the result is rounded
once more. Against a complex64 product of the same inputs, each output part
is then off by at most 2u(|A||B|)_ij, with u the unit roundoff of the part
dtype (2^-8 bfloat16, 2^-11 float16): one rounding of each product and one
of the sum, and |Ar||Br| + |Ai||Bi| <= |A||B| (tests/test_linalg.py checks
3u); "block" rounds once. No vendor library has a complex GEMM for these
parts at all.

Mixed real and complex operands follow torch: the GEMM ops (mm, bmm, mv, dot,
addmm, ...) and cross require one dtype and raise otherwise, addr promotes.
``aten.convolution``, which has no complex kernel in torch at all, takes a
real operand with a complex one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

import torch
from torch import Tensor
from torch._ops import OpOverload

from .. import _lowering, config
from ..tensor import ComplexTensor, component_dtype_of, parts_interleave
from ._common import CType, ctype_of, opmath, partwise, result_ctype, size_hint
from ._parts import Parts, rounded, scale, split
from ._registry import REAL_TO_COMPLEX_OPS, dtype_text, register
from .extern import call_extern, native_gemm_traced, register_extern

aten = torch.ops.aten

GemmStrategy = Literal["4m", "3m", "block", "native"]
#: Every strategy, in the order of Note [Complex GEMM strategies].
STRATEGIES: tuple[GemmStrategy, ...] = ("4m", "3m", "block", "native")
#: Part dtypes with a vendor complex GEMM (cgemm, zgemm).
NATIVE_PARTS = (torch.float32, torch.float64)

#: A real bilinear function of two real tensors (a GEMM, a convolution, a cross product).
RealBilinear = Callable[[Tensor, Tensor], Tensor]


# -- the core --------------------------------------------------------------------------------


def complex_bilinear(
    f: RealBilinear,
    a: Tensor,
    b: Tensor,
    *,
    dtype: torch.dtype | None = None,
    conj_a: bool = False,
    conj_b: bool = False,
    strategy: Literal["4m", "3m"] = "4m",
    prepare: Callable[[Tensor], Tensor] | None = None,
) -> Parts:
    """``f(a, b)`` for a real bilinear ``f``, by real products of the parts ("4m" or "3m").

    ``a`` and ``b`` are ComplexTensors or real tensors, conjugated first if
    ``conj_a``/``conj_b`` (a sign in the combination, not a pass over the
    operand). Their parts enter ``f`` in ``dtype`` (default: promoted), after
    ``prepare`` if given (each part is read by two products: a layout fix
    belongs there, done once). Returns (re, im) in the computation dtype
    (float32 for float16/bfloat16 parts); im is None when both operands are
    real. See Note [Complex GEMM strategies].
    """
    if dtype is None:
        dtype = result_ctype(a, b).real
    compute = opmath(dtype)
    ar, ai = split(a, dtype)
    br, bi = split(b, dtype)
    if prepare is not None:
        ar, br = prepare(ar), prepare(br)
        ai = None if ai is None else prepare(ai)
        bi = None if bi is None else prepare(bi)

    def product(x: Tensor, y: Tensor) -> Tensor:
        return f(x, y).to(compute)

    # (ar + i sa ai)(br + i sb bi) = (ar br - sa sb ai bi) + i (sb ar bi + sa ai br)
    sa, sb = -1 if conj_a else 1, -1 if conj_b else 1
    if ai is None and bi is None:
        return product(ar, br), None
    if ai is None:
        return product(ar, br), _signed(product(ar, bi), sb)
    if bi is None:
        return product(ar, br), _signed(product(ai, br), sa)
    if strategy == "4m":
        rr, ii, ri, ir = product(ar, br), product(ai, bi), product(ar, bi), product(ai, br)
        re = rr - ii if sa * sb > 0 else rr + ii
        im = ri + ir if sa == sb else ri - ir
        return re, _signed(im, sb)
    if strategy == "3m":
        ai, bi = _signed(ai, sa), _signed(bi, sb)
        rr, ii = product(ar, br), product(ai, bi)
        # The operand sums are rounded to the part dtype, as the GEMM reads them.
        # Hazard: im = T3 - rr - ii cancels; its error scales with |ar + ai||br + bi|.
        ss = product((ar.to(compute) + ai).to(dtype), (br.to(compute) + bi).to(dtype))
        return rr - ii, ss - rr - ii
    raise ValueError(f"torchcx: complex_bilinear takes strategy '4m' or '3m', not {strategy!r}")


def _signed(x: Tensor, sign: int) -> Tensor:
    return x if sign > 0 else -x


def complex_matmul(
    a: Tensor,
    b: Tensor,
    *,
    gemm: OpOverload = aten.matmul.default,
    dtype: torch.dtype | None = None,
    conj_a: bool = False,
    strategy: GemmStrategy | None = None,
) -> Parts:
    """The complex GEMM ``gemm(a, b)`` (``aten.mm``, ``aten.bmm``, ``aten.mv``, ...) on real GEMMs.

    Every op of the matmul family computes its product here, so that a
    strategy (Note [Complex GEMM strategies]) applies to all of them; without
    ``strategy`` it is ``torchcx.config.matmul_strategy``, whose default
    "auto" asks ``gemm_strategy`` (Note [GEMM strategy rule]). ``gemm``
    contracts the last dim of ``a`` with the dim -2 of ``b`` (its only dim
    if ``b`` is a vector), as matmul does. Returns (re, im) in the computation
    dtype; im is None when both operands are real.
    """
    if dtype is None:
        dtype = result_ctype(a, b).real
    both_complex = isinstance(a, ComplexTensor) and isinstance(b, ComplexTensor)
    strategy = _choose(a, b, dtype, strategy if strategy is not None else config.matmul_strategy)
    if strategy == "native" and both_complex:
        return _native_product(gemm, a, b, dtype, conj_a)
    if strategy == "block" and (a.dim() >= 2 or b.dim() >= 2):
        return _block_product(gemm, a, b, dtype, conj_a)
    if strategy in ("block", "native"):  # a product of vectors: "4m"
        strategy = "4m"
    return complex_bilinear(gemm, a, b, dtype=dtype, conj_a=conj_a, strategy=strategy, prepare=_gemm_operand)


def _gemm_operand(t: Tensor) -> Tensor:
    """A part as BLAS reads it, made once rather than by each of the two GEMMs that read it.

    BLAS needs unit stride along the rows or the columns of a matrix, and no
    lazy negation: the parts of an interleaved tensor (stride 2) and the
    imaginary part of a conjugate view (neg bit) would be copied by every GEMM.
    """
    if t.is_neg():
        t = t.resolve_neg()
    if t.dim() >= 2 and not any(s == 1 or n == 1 for s, n in zip(t.stride()[-2:], t.shape[-2:])):
        t = t.contiguous()
    return t


def _block_product(gemm: OpOverload, a: Tensor, b: Tensor, dtype: torch.dtype, conj_a: bool) -> Parts:
    """One real GEMM on block operands (Note [Complex GEMM strategies], "block").

    The block is made of the smaller operand (its parts are written twice);
    a vector operand is always the stacked one. Rows of the result are the
    rows of ``a`` (dim -2, or -1 when ``b`` is a vector), columns those of ``b``.
    """
    compute = opmath(dtype)
    ar, ai = split(a, dtype)
    br, bi = split(b, dtype)
    ai = None if ai is None else _signed(ai, -1 if conj_a else 1)
    rows = -2 if b.dim() >= 2 else -1  # the dim of the result that indexes rows of a
    k_of_b = -2 if b.dim() >= 2 else -1  # the contracted dim of b
    expand_a = b.dim() < 2 or (a.dim() >= 2 and a.numel() <= b.numel())

    def halves(out: Tensor, dim: int) -> tuple[Tensor, Tensor]:
        # Each half laid out as eager's product is (contiguous), not as a slice of the block
        # result: a later view eager allows (einsum's bmm(...).view(...)) must be valid on the
        # parts too, or the lowering of a compiled graph fails where eager's view succeeds (a
        # batched TFNO contraction did). A half that already is contiguous (rows of an
        # unbatched result) is not copied.
        half = out.shape[dim] // 2
        return tuple(out.narrow(dim, start, half).to(compute).contiguous() for start in (0, half))

    if ai is None:
        # Ar @ [Br, Bi] = [ArBr, ArBi]; a vector b has no columns to stack: two products.
        if b.dim() < 2:
            return gemm(ar, br).to(compute), gemm(ar, bi).to(compute)
        return halves(gemm(ar, torch.cat([br, bi], dim=-1)), -1)
    if bi is None:
        # [Ar; Ai] @ Br = [ArBr; AiBr]; a vector a has no rows to stack: two products.
        if a.dim() < 2:
            return gemm(ar, br).to(compute), gemm(ai, br).to(compute)
        return halves(gemm(torch.cat([ar, ai], dim=-2), br), rows)
    if expand_a:
        # [[Ar, -Ai], [Ai, Ar]] @ [Br; Bi] = [ArBr - AiBi; AiBr + ArBi] = [Cr; Ci]
        block = torch.cat([torch.cat([ar, -ai], dim=-1), torch.cat([ai, ar], dim=-1)], dim=-2)
        return halves(gemm(block, torch.cat([br, bi], dim=k_of_b)), rows)
    # [Ar, Ai] @ [[Br, Bi], [-Bi, Br]] = [ArBr - AiBi, ArBi + AiBr] = [Cr, Ci]
    block = torch.cat([torch.cat([br, bi], dim=-1), torch.cat([-bi, br], dim=-1)], dim=-2)
    return halves(gemm(torch.cat([ar, ai], dim=-1), block), -1)


def _native_product(gemm: OpOverload, a: ComplexTensor, b: ComplexTensor, dtype: torch.dtype, conj_a: bool) -> Parts:
    """The vendor's complex GEMM on interleaved data, an extern kernel (Note [Extern kernels])."""
    a = a.with_component_dtype(dtype)
    b = b.with_component_dtype(dtype)
    if conj_a:
        a = ComplexTensor(a.re, -a.im)
    # ATen's CPU bmm hands a batch to MKL only when every matrix has a unit stride
    # (row- or column-major); otherwise it loops over the batch, copying each matrix
    # (an einsum's permuted operand: 512 copies and 3x the time in an FNO layer).
    # One copy of the whole operand first is a single pass (fused into the kernel that
    # writes the extern's input when the operand is computed in the graph).
    a, b = _gemm_ready(a), _gemm_ready(b)
    out = call_extern(gemm, (a, b), {})
    return out.re, out.im


def _gemm_ready(x: ComplexTensor) -> ComplexTensor:
    """``x``, or a contiguous copy when its matrices have no unit stride (strides in complex elements)."""
    if x.dim() < 2:
        return x
    rows, cols = x.shape[-2:]
    row_stride, col_stride = x.stride()[-2:]
    row_major = col_stride == 1 or cols == 1
    col_major = row_stride == 1 or rows == 1
    return x if row_major or col_major else x.contiguous()


# -- the strategy rule -----------------------------------------------------------------------


def _choose(a: Tensor, b: Tensor, dtype: torch.dtype, asked: str) -> GemmStrategy:
    """The strategy for one product: ``asked`` if available here, else the rule's."""
    if asked != "auto" and asked not in STRATEGIES:
        raise ValueError(f"torchcx: unknown GEMM strategy {asked!r}; expected 'auto' or one of {', '.join(STRATEGIES)}")
    if asked == "native" and (dtype not in NATIVE_PARTS or (_traced(a, b) and not native_gemm_traced())):
        asked = "auto"  # no vendor complex GEMM for these parts, or none in an exported graph
    if asked != "auto":
        return asked  # type: ignore[return-value]
    return gemm_strategy(a, b, dtype)


def gemm_dims(a: Tensor, b: Tensor) -> tuple[int, int, int, int]:
    """(batch, m, k, n) of the product of ``a`` and ``b`` with matmul's broadcasting."""
    m = size_hint(a.shape[-2]) if a.dim() >= 2 else 1
    k = size_hint(a.shape[-1])
    n = size_hint(b.shape[-1]) if b.dim() >= 2 else 1
    batch_shape = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return math.prod(size_hint(s) for s in batch_shape), m, k, n


def _traced(*xs: Tensor) -> bool:
    """Whether the product is traced into a graph (compiled) rather than computed (eager):
    Note [Traced or computed]."""
    return _lowering.without_values(*(x.re if isinstance(x, ComplexTensor) else x for x in xs))


def gemm_strategy(a: Tensor, b: Tensor, dtype: torch.dtype, *, compiled: bool | None = None) -> GemmStrategy:
    """The measured rule of Note [GEMM strategy rule] for ``a @ b`` with parts of ``dtype``.

    ``compiled``: whether the product is traced into a compiled graph (default:
    read off the operands).
    """
    if compiled is None:
        compiled = _traced(a, b)
    batch, m, k, n = gemm_dims(a, b)
    size = batch * m * k * n
    # (an exported graph holds no extern call: Note [Extern kernels in exported graphs])
    has_native = dtype in NATIVE_PARTS and (not compiled or native_gemm_traced())
    if a.device.type != "cpu":
        # Not measured yet: the vendor kernel eager uses where there is one.
        return "native" if has_native else "4m"
    # The block is made of the smaller operand; a vector b makes it of a.
    vector = m == 1 or n == 1  # the block would copy the matrix for a vector's worth of output
    small, large = sorted((size_hint(a.numel()), size_hint(b.numel())))
    skinny = not vector and (8 * small <= large or k <= 16)  # the block copies little next to 4 products
    if compiled and has_native:
        return "block" if size < _NATIVE_MIN_SIZE else "native"
    if not compiled and has_native and _interleaved(a) and _interleaved(b):
        return "native"  # eager's own kernel on the operands' memory: no copy at all
    if vector:
        return "4m"
    if skinny or size <= _SMALL_SIZE or (not compiled and not has_native):
        return "block"
    return "4m"


#: b * m * k * n below which the extern call's fixed cost outweighs cgemm's speed (compiled).
_NATIVE_MIN_SIZE = 1 << 17
#: b * m * k * n up to which one GEMM call beats four (launch and dispatch costs).
_SMALL_SIZE = 1 << 18


def _interleaved(x: Tensor) -> bool:
    """Whether ``x``'s parts are the halves of one interleaved buffer (a native complex tensor's memory)."""
    if not isinstance(x, ComplexTensor):
        return False
    return not x.re.is_neg() and not x.im.is_neg() and parts_interleave(x.re, x.im)


# -- dtypes, scalars and results ---------------------------------------------------------------


def _same_ctype(name: str, *tensors: Tensor | None) -> CType:
    """The common value type of operands torch requires to share one dtype (mm, bmm, ...)."""
    present = [t for t in tensors if t is not None]
    ctypes = [ctype_of(t) for t in present]
    if any(c != ctypes[0] for c in ctypes):
        raise RuntimeError(
            f"{name}: expected all tensors to have the same dtype, but got " + ", ".join(dtype_text(t) for t in present)
        )
    return ctypes[0]


def _check_scalars(ctype: CType, *scalars: Any) -> None:
    # torch converts alpha/beta to the result dtype: a complex one into a real result fails.
    if not ctype.is_complex and any(isinstance(s, complex) for s in scalars):
        raise RuntimeError("value cannot be converted to type float without overflow")


def _add_scaled(
    name: str,
    self: Tensor,
    product: Parts,
    beta: Any,
    alpha: Any,
    ctype: CType,
) -> Tensor:
    """beta * self + alpha * product, the epilogue of addmm & co (complex scalars are complex products).

    As torch's kernels: beta == 0 ignores ``self`` (its nan and inf are not
    propagated), and ``self`` must broadcast to the product's shape.
    """
    pr, pi = product
    shape = pr.shape
    if torch.broadcast_shapes(self.shape, shape) != shape:
        raise RuntimeError(f"{name}: the input of shape {list(self.shape)} is not broadcastable to {list(shape)}")
    re, im = scale(alpha, pr, pi)
    if beta != 0:
        sr, si = split(self, re.dtype)
        sr, si = scale(beta, sr, si)
        re = re + sr
        if si is not None:
            # (a new tensor either way: the result must not alias self)
            im = si + torch.zeros_like(re) if im is None else im + si
    return rounded(re, im, ctype)


# -- the matmul family -----------------------------------------------------------------------
# (``calls_extern``: the "native" strategy runs the vendor's complex GEMM as an extern kernel.)


@register(aten.mm.default, calls_extern=True)
def mm_impl(a: Tensor, b: Tensor) -> Tensor:
    ctype = _same_ctype("mm", a, b)
    return rounded(*complex_matmul(a, b, gemm=aten.mm.default), ctype)


@register(aten.bmm.default, calls_extern=True)
def bmm_impl(a: Tensor, b: Tensor) -> Tensor:
    ctype = _same_ctype("bmm", a, b)
    return rounded(*complex_matmul(a, b, gemm=aten.bmm.default), ctype)


@register(aten.mv.default, calls_extern=True)
def mv_impl(a: Tensor, v: Tensor) -> Tensor:
    ctype = _same_ctype("mv", a, v)
    return rounded(*complex_matmul(a, v, gemm=aten.mv.default), ctype)


@register(aten.dot.default, calls_extern=True)
def dot_impl(a: Tensor, b: Tensor) -> Tensor:
    ctype = _same_ctype("dot", a, b)
    return rounded(*complex_matmul(a, b, gemm=aten.dot.default), ctype)


@register(aten.vdot.default, calls_extern=True)
def vdot_impl(a: Tensor, b: Tensor) -> Tensor:
    # sum(conj(a) * b): the conjugation is a sign in the combination, not a pass over a.
    ctype = _same_ctype("vdot", a, b)
    return rounded(*complex_matmul(a, b, gemm=aten.dot.default, conj_a=True), ctype)


@register(aten.addmm.default, calls_extern=True)
def addmm_impl(self: Tensor, a: Tensor, b: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    ctype = _same_ctype("addmm", self, a, b)
    _check_scalars(ctype, alpha, beta)
    if alpha == 0 and a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0]:
        # BLAS semantics, as torch's addmm: alpha = 0 does not read a and b (no nan from them).
        product = _zero_product(a.shape[0], b.shape[1], ctype, a.device)
    else:
        product = complex_matmul(a, b, gemm=aten.mm.default)
    return _add_scaled("addmm", self, product, beta, alpha, ctype)


@register(aten.baddbmm.default, calls_extern=True)
def baddbmm_impl(self: Tensor, a: Tensor, b: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    ctype = _same_ctype("baddbmm", self, a, b)
    _check_scalars(ctype, alpha, beta)
    return _add_scaled("baddbmm", self, complex_matmul(a, b, gemm=aten.bmm.default), beta, alpha, ctype)


@register(aten.addbmm.default, calls_extern=True)
def addbmm_impl(self: Tensor, a: Tensor, b: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    ctype = _same_ctype("addbmm", self, a, b)
    _check_scalars(ctype, alpha, beta)
    _check_addbmm_shapes(a, b)
    if alpha == 0:
        product = _zero_product(a.shape[1], b.shape[2], ctype, a.device)
    else:
        # sum_i a[i] @ b[i] as one GEMM over the batch-extended contraction: [a_0 .. a_n] @ [b_0; ..; b_n].
        n, m, k = a.shape
        a_wide = a.transpose(0, 1).reshape(m, n * k)
        product = complex_matmul(a_wide, b.reshape(n * k, b.shape[2]), gemm=aten.mm.default)
    return _add_scaled("addbmm", self, product, beta, alpha, ctype)


def _check_addbmm_shapes(a: Tensor, b: Tensor) -> None:
    # The one-GEMM form above would silently accept shapes torch's addbmm rejects.
    if a.dim() != 3 or b.dim() != 3:
        raise RuntimeError(f"addbmm: batch1 and batch2 must be 3-D tensors, got {a.dim()}-D and {b.dim()}-D")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {a.shape[0]} and {b.shape[0]}")
    if a.shape[2] != b.shape[1]:
        raise RuntimeError(
            f"Incompatible matrix sizes for bmm ({a.shape[1]}x{a.shape[2]} and {b.shape[1]}x{b.shape[2]})"
        )


def _zero_product(m: int, n: int, ctype: CType, device: torch.device) -> Parts:
    return torch.zeros((m, n), dtype=opmath(ctype.real), device=device), None


@register(aten.addmv.default, calls_extern=True)
def addmv_impl(self: Tensor, a: Tensor, v: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    ctype = _same_ctype("addmv", self, a, v)
    _check_scalars(ctype, alpha, beta)
    return _add_scaled("addmv", self, complex_matmul(a, v, gemm=aten.mv.default), beta, alpha, ctype)


@register(aten.addr.default)
def addr_impl(self: Tensor, u: Tensor, v: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    # torch promotes here (unlike the GEMM ops): a real vector costs two real products, not four.
    ctype = result_ctype(self, u, v)
    _check_scalars(ctype, alpha, beta)
    product = complex_bilinear(torch.outer, u, v, dtype=ctype.real)
    return _add_scaled("addr", self, product, beta, alpha, ctype)


# -- other bilinear ops ------------------------------------------------------------------------


@register(aten.linalg_cross.default)
def linalg_cross_impl(a: Tensor, b: Tensor, *, dim: int = -1) -> Tensor:
    ctype = _same_ctype("linalg.cross", a, b)
    return rounded(*complex_bilinear(lambda x, y: torch.linalg.cross(x, y, dim=dim), a, b), ctype)


@register(aten.convolution.default)
def convolution_impl(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
) -> Tensor:
    """Convolution (or its transpose) with complex input and/or weight: real convolutions of the parts.

    Torch's native convolution kernels take no complex tensors at all (its
    ``conv1d``/``conv2d``/... split complex operands themselves before they get
    here); this computes ``aten.convolution`` for them, and for a real
    operand with a complex one, which costs two real convolutions. (Autograd
    does not differentiate ``aten.convolution`` with a complex output; the
    ``F.conv*`` path is differentiable.)
    """
    ctype = result_ctype(input, weight, bias)

    def conv(x: Tensor, w: Tensor) -> Tensor:
        return torch.convolution(x, w, None, stride, padding, dilation, transposed, output_padding, groups)

    re, im = complex_bilinear(conv, input, weight, dtype=ctype.real)
    if bias is not None:
        # bias is per output channel (dim 1): broadcast it over the batch and spatial dims.
        br, bi = split(bias, re.dtype)
        shape = (1, -1) + (1,) * (re.dim() - 2)
        re = re + br.reshape(shape)
        if bi is not None:
            im = (torch.zeros_like(re) if im is None else im) + bi.reshape(shape)
    return rounded(re, im, ctype)


@register(aten._convolution.default)
def _convolution_impl(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
    benchmark: bool,
    deterministic: bool,
    cudnn_enabled: bool,
    allow_tf32: bool,
) -> Tensor:
    # The backend-selection flags do not change the values.
    return convolution_impl(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)


# -- reductions of the linalg family -----------------------------------------------------------

# trace and block_diag are linear: f(re + i im) = f(re) + i f(im).
partwise(aten.trace.default, aten.block_diag.default)


@register(aten.linalg_vector_norm.default)
def linalg_vector_norm_impl(
    x: Tensor,
    ord: float = 2,
    dim: Sequence[int] | int | None = None,
    keepdim: bool = False,
    *,
    dtype: torch.dtype | None = None,
) -> Tensor:
    # ||z||_p = ||(|z_k|)_k||_p: the real norm of the moduli, |z| by hypot (no overflow of re^2 + im^2).
    if not isinstance(x, ComplexTensor):
        return aten.linalg_vector_norm.default(x, ord, dim, keepdim, dtype=dtype)
    if dtype is not None and not dtype.is_complex:
        raise RuntimeError(f"linalg.vector_norm: dtype should be complex for complex inputs, but got {dtype}")
    part = x.component_dtype if dtype is None else component_dtype_of(dtype)
    compute = opmath(part)
    modulus = torch.hypot(x.re.to(compute), x.im.to(compute))
    return torch.linalg.vector_norm(modulus, ord, dim, keepdim).to(part)


# -- LAPACK: extern kernels --------------------------------------------------------------------

# The factorizations and solvers run as the native complex LAPACK kernel on the
# interleaved data (Note [Extern kernels]). These are the overloads the public
# torch.linalg functions reach under dispatch (their CompositeImplicit wrappers
# decompose into them). Only the functional overloads: in-place and out=
# variants copy the functional result (Note [How an op is resolved]), which
# is right whatever the memory layout of the out= tensor.
register_extern(
    aten.cholesky.default,
    aten.cholesky_inverse.default,
    aten.cholesky_solve.default,
    aten._cholesky_solve_helper.default,
    aten.linalg_cholesky_ex.default,
    aten.geqrf.default,
    aten.ormqr.default,
    aten.linalg_householder_product.default,
    aten.linalg_qr.default,
    aten.lu_unpack.default,
    aten.linalg_lu.default,
    aten.linalg_lu_factor_ex.default,
    aten.linalg_lu_solve.default,
    aten.linalg_ldl_factor_ex.default,
    aten.linalg_ldl_solve.default,
    aten.triangular_solve.default,
    aten.linalg_solve_triangular.default,
    aten._linalg_solve_ex.default,
    aten.linalg_inv_ex.default,
    aten._linalg_det.default,
    aten._linalg_slogdet.default,
    aten._linalg_svd.default,
    aten._linalg_eigh.default,
    aten.linalg_eig.default,
    aten._linalg_eigvals.default,
    aten.linalg_lstsq.default,
    aten.linalg_matrix_exp.default,
)


@register(aten.linalg_pinv.atol_rtol_tensor, calls_extern=True)
def linalg_pinv_impl(
    x: Tensor,
    *,
    atol: Tensor | None = None,
    rtol: Tensor | None = None,
    hermitian: bool = False,
) -> Tensor:
    """Moore-Penrose inverse from the SVD (or eigendecomposition): V diag(1/s) U^H.

    Torch's definition: singular values at or below max(atol, rtol * s_max)
    count as zero; without tolerances rtol = eps * max(m, n) (zero when atol > 0).
    The factorization is the extern kernel; the rest is real arithmetic on the
    parts and one complex GEMM.
    """
    if not isinstance(x, ComplexTensor):
        return aten.linalg_pinv.atol_rtol_tensor(x, atol=atol, rtol=rtol, hermitian=hermitian)
    part = x.component_dtype
    m, n = x.shape[-2], x.shape[-1]
    if x.numel() == 0:
        zero = torch.zeros((*x.shape[:-2], n, m), dtype=part, device=x.device)
        return ComplexTensor(zero, torch.zeros_like(zero))
    atol, rtol = _pinv_tolerances(x, atol, rtol)
    if hermitian:
        s, u = torch.linalg.eigh(x)
        s_abs = s.abs()
        tol = torch.maximum(atol.unsqueeze(-1), rtol.unsqueeze(-1) * s_abs.amax(dim=-1, keepdim=True))
        s_inv = torch.where(s_abs > tol, s.reciprocal(), torch.zeros((), dtype=s.dtype, device=s.device))
        left, right = u, u
    else:
        left, s, right = torch.linalg.svd(x, full_matrices=False)
        right = right.mH
        tol = torch.maximum(atol.unsqueeze(-1), rtol.unsqueeze(-1) * s.narrow(-1, 0, 1))
        s_inv = torch.where(s > tol, s.reciprocal(), torch.zeros((), dtype=s.dtype, device=s.device))
    # V diag(s_inv) U^H: scale the columns of V (a real scaling of each part), then one GEMM.
    s_inv = s_inv.to(opmath(part)).unsqueeze(-2)
    scaled = ComplexTensor(right.re.to(s_inv.dtype) * s_inv, right.im.to(s_inv.dtype) * s_inv)
    re, im = complex_matmul(scaled, left.mH, dtype=s_inv.dtype)
    return rounded(re, im, CType(part, True))


def _pinv_tolerances(x: ComplexTensor, atol: Tensor | None, rtol: Tensor | None) -> tuple[Tensor, Tensor]:
    """(atol, rtol) as float64 tensors, with torch's defaults."""
    for name, tol in (("atol", atol), ("rtol", rtol)):
        if tol is not None and (isinstance(tol, ComplexTensor) or tol.is_complex()):
            raise RuntimeError(f"linalg.pinv: {name} tensor of complex type is not supported.")
    options = {"dtype": torch.float64, "device": x.device}
    atol_t = torch.zeros((), **options) if atol is None else atol
    if rtol is not None:
        return atol_t, rtol
    eps = torch.finfo(x.component_dtype).eps
    default = torch.full((), eps * max(x.shape[-1], x.shape[-2]), **options)
    if atol is None:
        return atol_t, default
    return atol_t, torch.where(atol > 0, torch.zeros((), **options), default)


# The eigendecomposition of a real matrix is complex.
REAL_TO_COMPLEX_OPS.update((aten.linalg_eig, aten._linalg_eigvals))
