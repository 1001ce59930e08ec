"""Numerics of the complex pointwise ops: special values and accuracy.

Edge-value parity
-----------------
Every complex pointwise op runs over a grid of real and imaginary parts
``GRID`` x ``GRID`` (21 x 21 values: signed zeros, subnormals, 1e-5, 1/2, 1,
huge values, values near the largest float32, infinities, nan), for complex64
and complex128, three ways: eager PyTorch (native complex tensors), NumPy
(complex128, rounded to the dtype) and torchcx, both on ComplexTensors in eager
mode and through ``torchcx.compile`` (Inductor's kernels). Binary
ops take one operand from the grid and the other from ``OTHERS``, both ways
round; pow also takes number exponents (eager's pow(Tensor, Scalar) has fast
paths). Ops NumPy has no function for (``COMPOSITE``: sigmoid, logaddexp,
lerp, ...) are evaluated from their definition in NumPy's widest complex type
(80-bit extended on x86-64), so that their reference is as accurate as NumPy's
own functions are in complex128.

Wherever eager agrees with NumPy, torchcx must agree with NumPy; where eager
and NumPy disagree either answer is accepted (their algorithms differ there:
overflowing intermediates, Smith's versus C99 division, NumPy's naive log1p,
FMA contraction in eager's kernels, ...). Each op is one tensor per dtype, so
eager's vectorized kernels see the layout of a user's tensor.

Two values *agree*, part by part, when both are nan, or both are the same
infinity, or both are finite and ``|a - b| <= 16 eps (max(|a|, |b|) + tiny)``
(eps and tiny of the part dtype: 16 units in the last place of the larger
value, and 16 subnormal spacings near zero; 16 rather than a few because some
grid points are ill-conditioned, e.g. cpow's exp(w log z) at |w log z| ~ 20
in float32, where eager itself is 8 ulps from the true value). Signs of zero
count: when both values are zeros they must have the same sign.

The parity figure, per op and overall, is printed in the terminal summary
(the "torchcx numerics parity" section) and written to
``$TORCHCX_PARITY_JSON`` when that is set. Reproduce with::

    python -m pytest tests/test_numerics.py -p no:xdist -q -k parity

Accuracy
--------
Random inputs in the regimes where naive formulas fail (tiny |z|, near branch
cuts, near the unit circle, large parts, near overflow) are compared against
mpmath at 60 digits: error within 8 eps, relative to each part where each
part is well conditioned, else to |f(z)|; near a branch cut the result must
lie on the right side of it.

Low precision
-------------
float16/bfloat16 parts are computed in float32 and rounded once: their results
must be exactly those of the float32 computation on the same (rounded) inputs.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Callable
from typing import Any

import mpmath
import numpy as np
import pytest
import torch

import torchcx
from together import in_group
from torchcx import ComplexTensor

GRID = (
    0.0,
    -0.0,
    1e-40,
    -1e-40,
    1e-30,
    -1e-30,
    1e-5,
    -1e-5,
    0.5,
    -0.5,
    1.0,
    -1.0,
    1e20,
    -1e20,
    1e30,
    -1e30,
    3e38,
    -3e38,
    math.inf,
    -math.inf,
    math.nan,
)
#: The other operand of binary ops: moderate, negative real, imaginary, huge.
OTHERS = (1.5 - 0.5j, -2 + 0j, 0.5j, 1e30 + 1e30j)
RTOL_ULPS = 16
DTYPES = (torch.complex64, torch.complex128)
NP_DTYPE = {torch.complex64: np.complex64, torch.complex128: np.complex128}


# -- NumPy references (complex128) -------------------------------------------------------


def _np_sigmoid(z: np.ndarray) -> np.ndarray:
    # The stable form: e^z / (1 + e^z) for Re z < 0 (e^-z could overflow).
    pos = z.real >= 0
    w = np.exp(np.where(pos, -z, z))
    return np.where(pos, 1 / (1 + w), w / (1 + w))


def _np_logaddexp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    hi = np.where(a.real >= b.real, a, b)
    lo = np.where(a.real >= b.real, b, a)
    return hi + np.log1p(np.exp(lo - hi))


def _np_lerp(a: np.ndarray, b: np.ndarray, w: complex) -> np.ndarray:
    return a + w * (b - a)


UNARY: dict[str, tuple[Callable[[Any], Any], Callable[[np.ndarray], np.ndarray]]] = {
    "abs": (torch.abs, np.abs),
    "angle": (torch.angle, np.angle),
    "sgn": (torch.sgn, np.sign),
    "neg": (torch.neg, np.negative),
    "positive": (torch.positive, np.positive),
    "conj_physical": (torch.conj_physical, np.conj),
    "reciprocal": (torch.reciprocal, np.reciprocal),
    "square": (torch.square, np.square),
    "exp": (torch.exp, np.exp),
    "exp2": (torch.exp2, np.exp2),
    "expm1": (torch.expm1, np.expm1),
    "log": (torch.log, np.log),
    "log2": (torch.log2, np.log2),
    "log10": (torch.log10, np.log10),
    "log1p": (torch.log1p, np.log1p),
    "sqrt": (torch.sqrt, np.sqrt),
    "rsqrt": (torch.rsqrt, lambda z: 1 / np.sqrt(z)),
    "sin": (torch.sin, np.sin),
    "cos": (torch.cos, np.cos),
    "tan": (torch.tan, np.tan),
    "sinh": (torch.sinh, np.sinh),
    "cosh": (torch.cosh, np.cosh),
    "tanh": (torch.tanh, np.tanh),
    "asin": (torch.asin, np.arcsin),
    "acos": (torch.acos, np.arccos),
    "atan": (torch.atan, np.arctan),
    "asinh": (torch.asinh, np.arcsinh),
    "acosh": (torch.acosh, np.arccosh),
    "atanh": (torch.atanh, np.arctanh),
    "sigmoid": (torch.sigmoid, _np_sigmoid),
    "sinc": (torch.sinc, np.sinc),
    "silu": (torch.nn.functional.silu, lambda z: z * _np_sigmoid(z)),
    "tanhshrink": (torch.nn.functional.tanhshrink, lambda z: z - np.tanh(z)),
    "softsign": (torch.nn.functional.softsign, lambda z: z / (1 + np.abs(z))),
    "isnan": (torch.isnan, np.isnan),
    "isinf": (torch.isinf, np.isinf),
    "isfinite": (torch.isfinite, np.isfinite),
    "isreal": (torch.isreal, np.isreal),
    "logical_not": (torch.logical_not, np.logical_not),
}

BINARY: dict[str, tuple[Callable[[Any, Any], Any], Callable[[np.ndarray, np.ndarray], np.ndarray]]] = {
    "add": (torch.add, np.add),
    "sub": (torch.sub, np.subtract),
    "mul": (torch.mul, np.multiply),
    "div": (torch.div, np.divide),
    "pow": (torch.pow, np.power),
    "logaddexp": (torch.logaddexp, _np_logaddexp),
    "ldexp": (torch.ldexp, lambda a, b: a * np.power(2.0, b)),
    "lerp_0.3": (lambda a, b: torch.lerp(a, b, 0.3), lambda a, b: _np_lerp(a, b, 0.3)),
    "lerp_0.7": (lambda a, b: torch.lerp(a, b, 0.7), lambda a, b: _np_lerp(a, b, 0.7)),
    "addcmul": (lambda a, b: torch.addcmul(a, b, b, value=0.5), lambda a, b: a + 0.5 * (b * b)),
    "addcdiv": (lambda a, b: torch.addcdiv(a, a, b, value=2), lambda a, b: a + 2 * (a / b)),
    "eq": (torch.eq, np.equal),
    "ne": (torch.ne, np.not_equal),
    "logical_and": (torch.logical_and, np.logical_and),
    "logical_or": (torch.logical_or, np.logical_or),
    "logical_xor": (torch.logical_xor, np.logical_xor),
    "isclose": (torch.isclose, lambda a, b: np.isclose(a, b, rtol=1e-5, atol=1e-8)),
}

#: Ops NumPy has no function for: their reference is their definition evaluated
#: in the widest complex type NumPy has (80-bit extended on x86-64), so that it is
#: as accurate as NumPy's own functions are in complex128.
COMPOSITE = {
    "rsqrt",
    "sigmoid",
    "sinc",
    "silu",
    "tanhshrink",
    "softsign",
    "logaddexp",
    "ldexp",
    "lerp_0.3",
    "lerp_0.7",
    "addcmul",
    "addcdiv",
}
WIDE = np.clongdouble

#: Number exponents of pow (eager's pow(Tensor, Scalar) has fast paths for some).
POW_SCALARS = (0, 1, 2, 3, -1, -2, 0.5, -0.5, 2.5, 4, 1j)
#: Number bases of pow (pow(Scalar, Tensor), ldexp's 2): finite nonzero ones have their log
#: computed once (pointwise._cpow_of_number); 3.3 is rounded to float32 first, as eager's;
#: 0 takes the general formula. At most CHUNK of them: one compilation.
POW_BASES = (2, 0.5, -1, 1j, -2.5 - 3j, 1e30, 3.3, 0)


# -- inputs and comparison -------------------------------------------------------------------


def grid(dtype: torch.dtype) -> torch.Tensor:
    """All GRID x GRID complex values, flattened (re varies slowest)."""
    g = torch.tensor(GRID, dtype=torch.float64)
    re = g.repeat_interleave(len(GRID))
    im = g.repeat(len(GRID))
    return torch.complex(re, im).to(dtype)


def agree(a: np.ndarray, b: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """Elementwise agreement of two results (complex: both parts), as defined above."""
    if a.dtype == np.bool_ or b.dtype == np.bool_:
        return a == b
    if np.iscomplexobj(a) or np.iscomplexobj(b):
        a, b = np.asarray(a, np.complex128), np.asarray(b, np.complex128)
        return agree(a.real, b.real, dtype) & agree(a.imag, b.imag, dtype)
    part = torch.finfo(dtype)
    tol = RTOL_ULPS * part.eps
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    with np.errstate(all="ignore"):
        both_nan = np.isnan(a) & np.isnan(b)
        same_inf = np.isinf(a) & (a == b)
        close = (
            np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= tol * (np.maximum(np.abs(a), np.abs(b)) + part.tiny))
        )
    zero_signs = ~((a == 0) & (b == 0)) | (np.signbit(a) == np.signbit(b))
    return both_nan | same_inf | (close & zero_signs)


def _to_numpy(x: Any) -> np.ndarray:
    if isinstance(x, ComplexTensor):
        x = x.to_interleaved()
    return x.detach().numpy()


def _np_reference(
    fn: Callable[..., np.ndarray], args: list[np.ndarray], like: np.ndarray, wide: bool = False
) -> np.ndarray:
    with np.errstate(all="ignore"):
        out = np.asarray(fn(*[a.astype(WIDE if wide else np.complex128) for a in args]))
        return out.astype(like.dtype) if out.dtype != np.bool_ else out


def run_three_ways(
    fn: Callable[..., Any],
    np_fn: Callable[..., np.ndarray],
    inputs: list[torch.Tensor],
    wide: bool = False,
    compiled: Callable[[], np.ndarray] | None = None,
):
    """(eager, NumPy, torchcx) results of fn on native complex ``inputs``: torchcx on
    ComplexTensors, or ``compiled()``'s result (the op through ``torchcx.compile``)."""
    eager = _to_numpy(fn(*[t.clone() for t in inputs]))
    ref = _np_reference(np_fn, [t.numpy() for t in inputs], eager, wide)
    if compiled is not None:
        cx = compiled()
    else:
        cx = _to_numpy(fn(*[ComplexTensor.from_interleaved(t.clone()) for t in inputs]))
    return eager, ref, cx


#: Ops per compilation of a family. Inductor fuses ops reading the same grid into a few large
#: kernels, and g++'s optimization of a function is superlinear in its size (mostly its
#: redundancy elimination): the 39 unary ops in complex128 compiled as one function took
#: 108 s, in chunks of 8, 59 s (2026-12-05, Sapphire Rapids host, one process, cold).
CHUNK = 8


@functools.cache  # (asked once per test case at collection, for its chunk)
def _family(family: str) -> tuple[list[str], list[Callable[..., Any]]]:
    """The op names of a family (unary, binary, pow_scalar: its exponents) and their functions."""
    if family == "unary":
        names = sorted(UNARY)
        return names, [UNARY[n][0] for n in names]
    if family == "binary":
        names = sorted(BINARY)
        return names, [BINARY[n][0] for n in names]
    if family == "pow_base":
        return [str(b) for b in POW_BASES], [lambda z, b=b: torch.pow(b, z) for b in POW_BASES]
    return [str(w) for w in POW_SCALARS], [lambda z, w=w: torch.pow(z, w) for w in POW_SCALARS]


def _chunk(family: str, name: str) -> int:
    return _family(family)[0].index(name) // CHUNK


def _compiled(family: str, dtype: torch.dtype, name: str) -> np.ndarray:
    """Op ``name`` of ``family`` over its grid through ``torchcx.compile``, compiled with the
    rest of its chunk (``_compiled_chunk``)."""
    return _compiled_chunk(family, dtype, _chunk(family, name))[name]


@functools.cache
def _compiled_chunk(family: str, dtype: torch.dtype, chunk: int) -> dict[str, np.ndarray]:
    """The ops of a chunk of a family over its grid, as one torchcx-compiled function: one
    compilation per CHUNK ops rather than one per op (Inductor's kernels are the same either
    way: each op is its own output)."""
    names, fns = (part[chunk * CHUNK : (chunk + 1) * CHUNK] for part in _family(family))
    inputs = list(_binary_inputs(dtype)) if family == "binary" else [grid(dtype)]

    def every_op(*args: torch.Tensor) -> tuple[Any, ...]:
        return tuple(f(*args) for f in fns)

    torch._dynamo.reset()
    outs = torchcx.compile(every_op, dynamic=False)(*[t.clone() for t in inputs])
    return {n: _to_numpy(o) for n, o in zip(names, outs)}


def _binary_inputs(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Grid values paired with each of OTHERS, as (grid, other) then (other, grid)."""
    g = grid(dtype)
    firsts, seconds = [], []
    for w in OTHERS:
        o = torch.full_like(g, w)
        firsts += [g, o]
        seconds += [o, g]
    return torch.cat(firsts), torch.cat(seconds)


def _describe(z: Any) -> str:
    return np.array2string(np.asarray(z), precision=9, floatmode="maxprec")


#: op -> dtype -> (passing points, points where eager agrees with NumPy)
PARITY: dict[str, dict[str, tuple[int, int]]] = {}


def _check_parity(name: str, dtype: torch.dtype, inputs: list[torch.Tensor], eager, ref, cx) -> None:
    reference = agree(eager, ref, dtype)
    ok = agree(cx, ref, dtype)
    failing = reference & ~ok
    PARITY.setdefault(name, {})[str(dtype).replace("torch.", "")] = (
        int((reference & ok).sum()),
        int(reference.sum()),
    )
    if failing.any():
        lines = [f"{name} {dtype}: {int(failing.sum())} of {int(reference.sum())} points differ from eager and NumPy:"]
        for i in np.flatnonzero(failing)[:8]:
            args = ", ".join(_describe(t.numpy()[i]) for t in inputs)
            lines.append(
                f"  {name}({args}): eager {_describe(eager[i])}, NumPy {_describe(ref[i])}, torchcx {_describe(cx[i])}"
            )
        pytest.fail("\n".join(lines))


def parity_summary() -> list[str]:
    """The parity figures: overall per dtype, then per op."""
    lines = []
    totals: dict[str, list[int]] = {}
    for name, per_dtype in sorted(PARITY.items()):
        cells = []
        for dt, (ok, n) in sorted(per_dtype.items()):
            t = totals.setdefault(dt, [0, 0])
            t[0] += ok
            t[1] += n
            cells.append(f"{dt} {ok}/{n}")
        lines.append(f"    {name:<14} " + "  ".join(cells))
    head = [
        f"edge-value parity {dt}: {ok}/{n} points ({100.0 * ok / max(n, 1):.2f}%) where eager agrees with NumPy"
        for dt, (ok, n) in sorted(totals.items())
    ]
    path = os.environ.get("TORCHCX_PARITY_JSON")
    if path:
        with open(path, "w") as f:
            json.dump({"totals": totals, "ops": PARITY}, f, indent=1, sort_keys=True)
    return head + lines


class _ParityReport:
    """A pytest plugin printing the parity figures in the terminal summary."""

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if PARITY:
            terminalreporter.write_sep("=", "torchcx numerics parity")
            for line in parity_summary():
                terminalreporter.write_line(line)


@pytest.fixture(scope="module", autouse=True)
def parity_report(request: pytest.FixtureRequest) -> None:
    manager = request.config.pluginmanager
    if not manager.has_plugin("torchcx-parity"):
        manager.register(_ParityReport(), "torchcx-parity")


# -- the parity tests ----------------------------------------------------------------------

_IDS = {torch.complex64: "complex64", torch.complex128: "complex128"}


#: torchcx on ComplexTensors, and compiled: Inductor's vectorized kernels (Sleef's math,
#: FMA contraction) must keep the special values the decompositions spell out.
MODES = ("eager", "compiled")


def _cases(family: str) -> list[Any]:
    """(name, dtype, mode) of a family's tests; the compiled tests of a chunk of its ops in one
    group (together.in_group): they share the chunk's compilation (``_compiled_chunk``), which
    each pytest-xdist worker running one of them would otherwise repeat."""
    cases = []
    pow_family = family in ("pow_scalar", "pow_base")  # (one test over all its numbers)
    for name in _family(family)[0] if not pow_family else [family]:
        for dtype in DTYPES:
            for mode in MODES:
                case_id = f"{name}-{_IDS[dtype]}-{mode}"
                if mode == "compiled":
                    chunk = "" if pow_family else f"-{_chunk(family, name)}"
                    case_id = in_group(case_id, f"numerics-{family}-{_IDS[dtype]}{chunk}")
                cases.append(pytest.param(name, dtype, mode, id=case_id))
    return cases


def _parity_name(name: str, mode: str) -> str:
    return name if mode == "eager" else f"{name} (compiled)"


#: Compiled points known to differ from eager and NumPy, with the reason: (op, dtype) -> reason.
#: Each is run and must fail (strict xfail), so a fix is noticed.
COMPILED_DIFFERENCES: dict[tuple[str, torch.dtype], str] = {
    # None today: addcdiv's were Dynamo's rewrite of it (Note [Dynamo's addcdiv]), pow's
    # were float32 rounding in exp(w log z) (now computed in float64).
}


def _expect_compiled_difference(request: pytest.FixtureRequest, name: str, dtype: torch.dtype, mode: str) -> None:
    reason = COMPILED_DIFFERENCES.get((name, dtype)) if mode == "compiled" else None
    if reason is not None:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))


@pytest.mark.parametrize("name,dtype,mode", _cases("unary"))
def test_parity_unary(name: str, dtype: torch.dtype, mode: str, request: pytest.FixtureRequest) -> None:
    _expect_compiled_difference(request, name, dtype, mode)
    fn, np_fn = UNARY[name]
    inputs = [grid(dtype)]
    compiled = (lambda: _compiled("unary", dtype, name)) if mode == "compiled" else None
    results = run_three_ways(fn, np_fn, inputs, name in COMPOSITE, compiled)
    _check_parity(_parity_name(name, mode), dtype, inputs, *results)


@pytest.mark.parametrize("name,dtype,mode", _cases("binary"))
def test_parity_binary(name: str, dtype: torch.dtype, mode: str, request: pytest.FixtureRequest) -> None:
    _expect_compiled_difference(request, name, dtype, mode)
    fn, np_fn = BINARY[name]
    inputs = list(_binary_inputs(dtype))
    compiled = (lambda: _compiled("binary", dtype, name)) if mode == "compiled" else None
    results = run_three_ways(fn, np_fn, inputs, name in COMPOSITE, compiled)
    _check_parity(_parity_name(name, mode), dtype, inputs, *results)


def _check_pow_parity(family: str, numbers: tuple[Any, ...], dtype: torch.dtype, mode: str) -> None:
    """pow of the grid and each of ``numbers`` (exponents for pow_scalar, bases for
    pow_base) against eager and NumPy, every number's grid concatenated."""
    g = grid(dtype)
    base = family == "pow_base"
    eager, ref, cx = [], [], []
    for name, fn, w in zip(*_family(family), numbers, strict=True):
        compiled = (lambda name=name: _compiled(family, dtype, name)) if mode == "compiled" else None
        np_fn = (lambda z, w=w: np.power(w, z)) if base else (lambda z, w=w: np.power(z, w))
        e, r, c = run_three_ways(fn, np_fn, [g], False, compiled)
        eager.append(e)
        ref.append(r)
        cx.append(c)
    inputs = [g.repeat(len(numbers)), torch.tensor(numbers, dtype=dtype).repeat_interleave(g.numel())]
    if base:
        inputs.reverse()
    _check_parity(_parity_name(family, mode), dtype, inputs, *map(np.concatenate, (eager, ref, cx)))


@pytest.mark.parametrize("name,dtype,mode", _cases("pow_scalar"))
def test_parity_pow_scalar(name: str, dtype: torch.dtype, mode: str) -> None:
    # pow(Tensor, Scalar): every number exponent over the grid.
    _check_pow_parity("pow_scalar", POW_SCALARS, dtype, mode)


@pytest.mark.parametrize("name,dtype,mode", _cases("pow_base"))
def test_parity_pow_base(name: str, dtype: torch.dtype, mode: str) -> None:
    # pow(Scalar, Tensor): every number base over the grid.
    _check_pow_parity("pow_base", POW_BASES, dtype, mode)


#: Divisors known at trace time to be a number or real (pointwise._div_by_number and
#: _div_by_real): every GRID value, and complex numbers for the number path.
NUMBER_DIVISORS = (*GRID, 1 / 3, 1.5 - 0.5j, 0.5j, -1e30 + 1e-30j)


def _bits(x: torch.Tensor) -> torch.Tensor:
    """Bit patterns, all nans alike (a nan's sign and payload are not a result)."""
    bits = x.view(torch.int32 if x.dtype == torch.float32 else torch.int64)
    return torch.where(x.isnan(), -1, bits)


@pytest.mark.parametrize("dtype", DTYPES, ids=_IDS.get)
def test_division_by_number_or_real_is_the_general_formula(dtype: torch.dtype) -> None:
    # The fast paths decide Smith's steps for the divisor in Python (a number) or from
    # d = +0 (a real tensor), and a number dividend's terms in Python; each must give,
    # bit for bit, what the general formula traced on tensors gives: signed zeros,
    # subnormals, overflow, inf and nan.
    from torchcx.ops import pointwise

    z = grid(dtype)
    a, b = z.real.contiguous(), z.imag.contiguous()
    real = a.dtype
    for w in NUMBER_DIVISORS:
        c, d = (w.real, w.imag) if isinstance(w, complex) else (w, 0.0)
        general = pointwise._div(a, b, torch.tensor(c, dtype=real), torch.tensor(d, dtype=real))
        fast = pointwise._div(a, b, c, d)
        for part, (x, y) in zip("re im".split(), zip(fast, general)):
            assert torch.equal(_bits(x), _bits(y)), (w, part)
    for c in GRID:  # a real tensor divisor: each GRID value against the whole grid
        divisor = torch.full_like(a, c)
        general = pointwise._div(a, b, divisor, torch.zeros_like(a))
        fast = pointwise._div(a, b, divisor, 0.0)
        for part, (x, y) in zip("re im".split(), zip(fast, general)):
            assert torch.equal(_bits(x), _bits(y)), (c, part)
    for w in NUMBER_DIVISORS:  # a number dividend (reciprocals, rsqrt, pow(z, -1)) over the grid
        c, d = (w.real, w.imag) if isinstance(w, complex) else (w, 0.0)
        general = pointwise._div(torch.full_like(a, c), torch.full_like(a, d), a, b)
        fast = pointwise._div(c, d, a, b)
        for part, (x, y) in zip("re im".split(), zip(fast, general)):
            assert torch.equal(_bits(torch.as_tensor(x, dtype=real).expand_as(y)), _bits(y)), (w, part)


# -- accuracy against mpmath ----------------------------------------------------------------

mpmath.mp.dps = 60


def _mp_sigmoid(z: Any) -> Any:
    return 1 / (1 + mpmath.exp(-z))


MP: dict[str, Callable[[Any], Any]] = {
    "exp": mpmath.exp,
    "expm1": mpmath.expm1,
    "log": mpmath.log,
    "log1p": lambda z: mpmath.log(1 + z),
    "log2": lambda z: mpmath.log(z) / mpmath.log(2),
    "log10": lambda z: mpmath.log(z) / mpmath.log(10),
    "sqrt": mpmath.sqrt,
    "sin": mpmath.sin,
    "cos": mpmath.cos,
    "tan": mpmath.tan,
    "sinh": mpmath.sinh,
    "cosh": mpmath.cosh,
    "tanh": mpmath.tanh,
    "asin": mpmath.asin,
    "acos": mpmath.acos,
    "atan": mpmath.atan,
    "asinh": mpmath.asinh,
    "acosh": mpmath.acosh,
    "atanh": mpmath.atanh,
    "sigmoid": _mp_sigmoid,
}


def _random_points(kind: str, n: int, seed: int, dtype: torch.dtype) -> np.ndarray:
    """Inputs of one regime (complex128; rounded to the dtype by the caller)."""
    rng = np.random.default_rng(seed)
    log_max = math.log(torch.finfo(dtype).max)
    sign = lambda: rng.choice([-1.0, 1.0], n)  # noqa: E731
    if kind == "tiny":  # |z| from 1e-30 to 1e-3, any phase
        r = 10.0 ** rng.uniform(-30, -3, n)
        t = rng.uniform(-np.pi, np.pi, n)
        return r * np.exp(1j * t)
    if kind == "unit_circle":  # |z| = 1 + tiny
        t = rng.uniform(-np.pi, np.pi, n)
        return (1 + sign() * 10.0 ** rng.uniform(-12, -2, n)) * np.exp(1j * t)
    if kind == "log1p_circle":  # |1 + z| = 1 + tiny
        t = rng.uniform(-np.pi, np.pi, n)
        return (1 + sign() * 10.0 ** rng.uniform(-12, -2, n)) * np.exp(1j * t) - 1
    if kind == "real_cut":  # x on the real axis beyond +-1, y a signed tiny number
        return sign() * rng.uniform(1, 10, n) + 1j * sign() * 10.0 ** rng.uniform(-30, -8, n)
    if kind == "imag_cut":  # iy beyond +-i, x a signed tiny number
        return sign() * 10.0 ** rng.uniform(-30, -8, n) + 1j * sign() * rng.uniform(1, 10, n)
    if kind == "negative_real":  # the cut of log and sqrt
        return -rng.uniform(1e-3, 10, n) + 1j * sign() * 10.0 ** rng.uniform(-30, -8, n)
    if kind == "large_imag":  # |y| large: tan, tanh -> +-i, +-1; sin, cos huge (but finite)
        return rng.uniform(-3, 3, n) + 1j * sign() * rng.uniform(10, 80, n)
    if kind == "large_real":
        return sign() * rng.uniform(10, 80, n) + 1j * rng.uniform(-3, 3, n)
    if kind == "near_overflow":  # e^x overflows, e^x cos y may not: no spurious inf
        return sign() * rng.uniform(log_max - 2, log_max + 0.5, n) + 1j * rng.uniform(-3, 3, n)
    if kind == "tanh_cut":  # |x| around log(max) / 2, where tanh switches to +-1 + i 4 sin y cos y e^-2|x|
        return sign() * rng.uniform(log_max / 2 - 3, log_max / 2 + 3, n) + 1j * rng.uniform(-3, 3, n)
    if kind == "moderate":
        return rng.uniform(-4, 4, n) + 1j * rng.uniform(-4, 4, n)
    raise ValueError(kind)


#: (regime, ops checked there). Parts are compared one by one (relative to the
#: part) in the regimes where each part of f(z) is well conditioned.
REGIMES: dict[str, tuple[str, ...]] = {
    "tiny": ("expm1", "log1p", "sin", "sinh", "tan", "tanh", "asin", "asinh", "atan", "atanh", "sqrt", "sigmoid"),
    "unit_circle": ("log", "log2", "log10"),
    "log1p_circle": ("log1p",),
    "real_cut": ("asin", "acos", "atanh", "acosh", "log", "sqrt"),
    "imag_cut": ("atan", "asinh", "log", "sqrt"),
    "negative_real": ("log", "sqrt", "acosh", "log1p"),
    "large_imag": ("tan", "tanh", "sin", "cos", "exp", "sinh", "cosh", "sigmoid"),
    "large_real": ("tanh", "tan", "sinh", "cosh", "exp", "expm1", "sigmoid"),
    "near_overflow": ("exp", "sinh", "cosh", "expm1", "sigmoid"),
    "tanh_cut": ("tanh",),
    "moderate": tuple(MP),
}
#: Regimes where the result's parts are compared with the norm of the result
#: rather than each with itself (one part is legitimately ill-conditioned).
NORMWISE = {"moderate", "large_imag", "large_real", "near_overflow", "tanh_cut"}
ACCURACY_ULPS = 8


def _mp_reference(name: str, z: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    fn = MP[name]
    out = np.empty(z.shape, np.complex128)
    for i, v in enumerate(z):
        w = complex(fn(mpmath.mpc(v.real, v.imag)))
        out[i] = w
    return out


@pytest.mark.parametrize("dtype", DTYPES, ids=_IDS.get)
@pytest.mark.parametrize("regime", sorted(REGIMES))
def test_accuracy(regime: str, dtype: torch.dtype) -> None:
    z = _random_points(regime, 48, sorted(REGIMES).index(regime), dtype).astype(NP_DTYPE[dtype])
    eps = torch.finfo(dtype).eps
    t = torch.from_numpy(z)
    errors = []
    for name in REGIMES[regime]:
        fn = UNARY[name][0]
        ref = _mp_reference(name, z.astype(np.complex128), dtype)
        cx = _to_numpy(fn(ComplexTensor.from_interleaved(t.clone()))).astype(np.complex128)
        with np.errstate(all="ignore"):
            ref = ref.astype(NP_DTYPE[dtype]).astype(np.complex128)  # overflows where the dtype does
            # Part errors, 0 where the parts are equal (the same infinity included).
            d_re = np.where(cx.real == ref.real, 0.0, np.abs(cx.real - ref.real))
            d_im = np.where(cx.imag == ref.imag, 0.0, np.abs(cx.imag - ref.imag))
            if regime in NORMWISE:  # relative to |f(z)|, its finite parts
                scale = np.hypot(np.where(np.isinf(ref.real), 0, ref.real), np.where(np.isinf(ref.imag), 0, ref.imag))
                err = np.hypot(d_re, d_im) / scale
            else:
                err = np.maximum(d_re / np.abs(ref.real), d_im / np.abs(ref.imag))
        err = np.where((d_re == 0) & (d_im == 0), 0.0, np.where(np.isnan(err), np.inf, err))
        worst = int(np.argmax(err))
        if not err[worst] <= ACCURACY_ULPS * eps:
            errors.append(f"{name}({z[worst]!r}) = {cx[worst]!r}, mpmath {ref[worst]!r} ({err[worst] / eps:.3g} eps)")
        # The right side of each branch cut: the sign of the part that jumps.
        if regime.endswith("_cut") or regime == "negative_real":
            side = np.sign(cx.imag) == np.sign(ref.imag)
            side &= np.sign(cx.real) == np.sign(ref.real)
            if not side.all():
                i = int(np.flatnonzero(~side)[0])
                errors.append(f"{name}({z[i]!r}) = {cx[i]!r} is on the wrong side of the cut (mpmath {ref[i]!r})")
    assert not errors, "\n".join(errors)


# -- float16 / bfloat16 parts ------------------------------------------------------------------


@pytest.mark.parametrize("part", (torch.float16, torch.bfloat16), ids=str)
@pytest.mark.parametrize("name", sorted(set(UNARY) - {"tanhshrink", "softsign"}))
def test_low_precision_parts(name: str, part: torch.dtype) -> None:
    # A float16/bfloat16 op is the float32 computation on the same values, rounded once.
    # (tanhshrink and softsign are compositions of ops, each rounded, as in eager.)
    fn = UNARY[name][0]
    g = grid(torch.complex64)
    re, im = g.real.to(part), g.imag.to(part)
    low = fn(torchcx.complex(re, im))
    high = fn(torchcx.complex(re.float(), im.float()))
    if isinstance(low, ComplexTensor):
        assert low.component_dtype == part
        pairs = [(low.re, high.re), (low.im, high.im)]
    else:
        pairs = [(low, high)]
    for lo, hi in pairs:
        expected = hi.to(lo.dtype) if hi.dtype.is_floating_point else hi
        assert lo.dtype == expected.dtype
        torch.testing.assert_close(lo, expected, rtol=0, atol=0, equal_nan=True)


if __name__ == "__main__":
    import sys

    sys.exit(pytest.main([__file__, "-p", "no:xdist", "-q", "-k", "parity", *sys.argv[1:]]))


def test_flush_subnormals_is_scoped_and_reaches_compiled_kernels() -> None:
    """torchcx.config.flush_subnormals: subnormals become zero in the block (XLA's CPU semantics),
    eagerly and in compiled kernels, and gradual underflow is back after it."""
    z = torch.complex(torch.tensor([1e-39, 1.0]), torch.tensor([-1e-40, 2.0]))  # subnormal float32 parts
    scale = torchcx.compile(lambda x: x * 3)
    expected = z * 3
    assert expected.real[0] != 0 and expected.imag[0] != 0  # gradual underflow
    with torchcx.config.flush_subnormals():
        flushed_eager, flushed_compiled = z * 3, scale(z)
    for flushed in (flushed_eager, flushed_compiled):
        assert flushed[0] == 0 and flushed[1] == expected[1]
    torch.testing.assert_close(scale(z), expected, rtol=0, atol=0)


#: Reductions over a dim, with NumPy's: eager and NumPy scale a mean's complex sum by the
#: complex 1/N, and start a product from 1 + 0i, so an infinite part meets a zero and makes
#: the other part nan (mean([-inf+0j]) is -inf+nanj, prod([-inf+infj]) nan+nanj). Found by
#: the differential fuzzer: torchcx divided each part by N, and multiplied without the start.
REDUCTIONS = {
    "mean": (lambda t: t.mean(-1), lambda a: np.mean(a, axis=-1)),
    "prod": (lambda t: t.prod(-1), lambda a: np.prod(a, axis=-1)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES, ids=_IDS.get)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_parity_reduction(name: str, dtype: torch.dtype, mode: str) -> None:
    # Each grid value alone (N = 1) and each paired with every value of OTHERS (N = 2).
    fn, np_fn = REDUCTIONS[name]
    g = grid(dtype)
    pairs = torch.stack([g.repeat(len(OTHERS)), torch.tensor(OTHERS, dtype=dtype).repeat_interleave(g.numel())], -1)
    eager, ref, cx = [], [], []
    for x in (g[:, None], pairs):
        torch._dynamo.reset()
        compiled = (
            (lambda x=x: _to_numpy(torchcx.compile(fn, dynamic=False)(x.clone()))) if mode == "compiled" else None
        )
        e, r, c = run_three_ways(fn, np_fn, [x], False, compiled)
        eager.append(e)
        ref.append(r)
        cx.append(c)
    inputs = [torch.cat([g, pairs[:, 0]]), torch.cat([torch.ones_like(g), pairs[:, 1]])]
    _check_parity(
        _parity_name(name, mode), dtype, inputs, np.concatenate(eager), np.concatenate(ref), np.concatenate(cx)
    )
