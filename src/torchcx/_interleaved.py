"""Vectorized (re, im) pairs in Inductor's C++ kernels, while torchcx compiles.

Note [Interleaved access]
-------------------------
A complex value in memory is a pair of adjacent parts, and real-only graphs
read and write the parts of such pairs at stride 2: complex128 as float64
pairs, the float32 or bfloat16 pairs that ``view_as_complex`` and
``view_as_real`` make of real activations (the rotary embedding), the int64
words of a complex64 view with a step (``x[:, ::2]``). Inductor 2.13's
vectorized kernel (``CppVecKernel``) moves a stride-2 vector one element at a
time through a stack buffer, and its tiling heuristic (``TilingSelect``),
counting such accesses as overhead, leaves the whole loop scalar instead
(the rotary embedding at B4 T512 H8 D64 ran at 0.5x eager).

While torchcx compiles, a stride-2 access is a shuffle instead:

* **Loads.** The 2n elements that hold n elements at stride 2 are loaded as
  contiguous vectors and split with ``at::vec::deinterleave2``; the pair
  (even, odd) is one CSE value, so the two parts of the same pairs share the
  loads and the shuffle. Reading the whole span touches one element beyond
  the accessed ones, after the last (the span starts at the load's index) or
  before the first (it starts one element earlier and the load takes the odd
  half): the first is used where the buffer's extent shows the element exists,
  otherwise the second, otherwise Inductor's own code.
* **Stores.** A stride-2 vector cannot be stored alone without writing the
  elements between its own (a read-modify-write would race with another
  thread writing them). So a stride-2 store is emitted as Inductor would
  and remembered; when the kernel then stores its partner, the element
  next to it in the same storage (the other part of the same pairs, in the
  same buffer or in another view of the same storage, as ``cat`` makes
  them), both are replaced by one ``at::vec::interleave2`` and contiguous
  stores of exactly the elements the two stores wrote.
* **Tiling.** The heuristic counts a stride-2 access of a dtype handled here
  as contiguous, since it now costs about as much.

Integer words are shuffled as floating-point vectors of the same width (a
bit cast), so bit patterns survive exactly. Written for torch 2.13
(``CppVecKernel.load``/``store``, ``_try_get_const_stride``,
``_get_num_vectors``, ``TilingSelect.select_tiling`` reading the module's
``stride_at_vec_range``) and applied on that minor only
(``_inductor_patches.WRITTEN_FOR``); where the internals are missing nothing is
patched, and tests/test_interleaved.py fails when the generated code stops
being vectorized.

Note [Pairs in lane order]
--------------------------
``at::vec::deinterleave2`` and ``interleave2`` of float vectors keep elements
in order, which takes shuffles across the halves of a 256-bit register
(``vpermps``, ``vperm2f128``). On Zen 1 those are several micro-ops each: the
in-place update ``x.mul_(p); x.add_(y)`` on 2^18 complex64 elements ran its one
kernel in 620 us, where the same kernel with in-lane shuffles ran in 205 us
(copy of the same bytes: 120 us; C++ timing of the generated code, with a test
run on the other core). ``_mm256_shuffle_ps(a, b, 0x88)`` and
``0xDD`` split pairs within each 128-bit lane, and ``_mm256_unpacklo_ps`` /
``unpackhi_ps`` join them back, exactly (the join is the split's inverse):
the parts come out in the order 0 1 4 5 2 3 6 7 instead of 0..7 (per 128-bit
lane alike for AVX-512). Elementwise arithmetic does not care in what order a
vector holds its elements, as long as every vector it combines holds them in
the same one.

So each split and join torchcx emits on float vectors (pair loads and stores
above, and the word splits and joins of Note [Words as pairs]) is marked, and
while the kernel is generated every value is tagged with its order
(``_order``): "lanes" for what a marked split made and what is computed from
it, "natural" for anything else that varies along the vectorized loop
(Inductor's own loads, index values). The kernel is emitted with the in-lane
shuffles only if no operation combined the two orders, no lane-order value
was stored by Inductor's own store or reduced, no natural value went into a
marked join, and the machine's vectors are AVX2 or AVX-512; otherwise every
marked shuffle stays the ordered ``at::vec`` one (the decision is the kernel's,
made when its body is emitted, so a conflict found late still applies to the
code before it). ``torchcx.config.lane_order = False`` keeps the ordered ones
everywhere. tests/test_interleaved.py checks both outcomes.

Note [Lane order and the tail]
-----------------------------
The loop's last, partial vector is a kernel of its own (``tail_size`` set), and
Inductor writes some of its operations for "the first ``tail_size`` lanes": the
scalarized ones (``isinf``, ``isnan``, ``signbit`` and every op with no vector
form store the vector, loop over that many lanes, and load the rest as zeros),
``frexp``, integer division (its divisor is set to 1 beyond them) and the masks
of indirect and masked loads. In lane order those lanes are not the first
elements: sqrt of nan+inf*j gave nan+nan*j at three of the nine positions in the
tail of 441 elements on AVX-512 (tests/test_numerics.py, Sapphire Rapids), and any
tail of more than one pair could on AVX2. A tail kernel therefore never uses
lane order: it is at most one vector a call, so nothing is lost.

No upstream issue was found for the element-at-a-time stride-2 access (searched
pytorch/pytorch for Inductor C++ stride-2 / non-contiguous loads, deinterleave,
``view_as_complex`` rotary embedding vectorization; the nearest is
pytorch/pytorch#99966, which vectorizes non-contiguous loads element by element).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

import sympy
import torch

from . import config
from ._patching import cannot_apply, patched_for_this_thread

# element dtype -> C++ type its vectors are shuffled as: 32- and 64-bit elements as
# floating-point vectors of their width (a bit cast); 16-bit ones converted to float
# (exactly), shuffled there, and converted back where a 16-bit value is needed.
_SHUFFLED = {
    torch.float32: "float",
    torch.float64: "double",
    torch.int32: "float",
    torch.int64: "double",
    torch.bfloat16: "float",
    torch.float16: "float",
}
_SIXTEEN = (torch.bfloat16, torch.float16)
_PENDING = "_torchcx_pending_pair_stores"

# Note [Pairs in lane order]: the marked shuffles (the ordered at::vec ones unless the kernel
# is emitted in lane order), the per-kernel state and the per-value order tag.
SPLIT = "at::vec::deinterleave2/*lanes*/("
JOIN = "at::vec::interleave2/*lanes*/("
_STATE = "_torchcx_lane_order"
_ORDER = "_torchcx_order"
LANES, NATURAL = "lanes", "natural"


@contextlib.contextmanager
def interleaved_access() -> Iterator[None]:
    """Note [Interleaved access], for the duration of one compilation."""
    try:
        from torch._inductor.codegen import cpp
    except ImportError:  # pragma: no cover - Inductor's layout changed
        cannot_apply("Interleaved access", "torch._inductor.codegen.cpp does not import")
        yield
        return
    kernel = getattr(cpp, "CppVecKernel", None)
    tiling = getattr(cpp, "TilingSelect", None)
    needed = (
        kernel is not None
        and tiling is not None
        and all(hasattr(kernel, name) for name in ("load", "store", "_try_get_const_stride", "_get_num_vectors"))
        and hasattr(cpp, "stride_at_vec_range")
    )
    if not needed:
        cannot_apply(
            "Interleaved access",
            "CppVecKernel.load/store/_try_get_const_stride/_get_num_vectors, TilingSelect or "
            "cpp.stride_at_vec_range is missing (stride-2 pairs are not vectorized)",
        )
        yield
        return
    from torch._inductor.codegen.cpp_utils import CppCSEVariable

    load, store, select = kernel.load, kernel.store, tiling.select_tiling
    reduction, gen_body, update_on_args = kernel.reduction, kernel.gen_body, CppCSEVariable.update_on_args

    def pair_load(self: Any, name: str, index: Any) -> Any:
        value = _pair_load(self, name, index)
        return load(self, name, index) if value is None else value

    def pair_store(self: Any, name: str, index: Any, value: Any, mode: Any = None) -> Any:
        if mode is not None or not _pair_store(self, name, index, value, store):
            _not_in_lane_order(self, value, "stored by Inductor's own store")
            return store(self, name, index, value, mode)
        return None

    def ordered_reduction(self: Any, dtype: Any, src_dtype: Any, reduction_type: str, value: Any) -> Any:
        _not_in_lane_order(self, value, f"reduced ({reduction_type})")
        return reduction(self, dtype, src_dtype, reduction_type, value)

    def lane_body(self: Any, code: Any = None) -> Any:
        return _in_lane_order(self, gen_body(self, code))

    def ordered_update(self: Any, name: str, args: Any, kwargs: Any) -> None:
        update_on_args(self, name, args, kwargs)
        _propagate_order(self, name, args)

    def select_tiling(self: Any, *args: Any, **kwargs: Any) -> Any:
        stride_at_vec_range = cpp.stride_at_vec_range

        def counted_stride(index: Any, var: Any, *rest: Any, **kw: Any) -> Any:
            stride = stride_at_vec_range(index, var, *rest, **kw)
            return sympy.S.One if stride == 2 else stride

        with patched_for_this_thread((cpp, "stride_at_vec_range", counted_stride)):
            return select(self, *args, **kwargs)

    # (each for the compiling thread only: Note [Patches and threads], torchcx/_patching.py)
    with patched_for_this_thread(
        (kernel, "load", pair_load),
        (kernel, "store", pair_store),
        (tiling, "select_tiling", select_tiling),
        (kernel, "reduction", ordered_reduction),
        (kernel, "gen_body", lane_body),  # (2.13's is CppKernel's, inherited: deleted again after)
        (CppCSEVariable, "update_on_args", ordered_update),
    ):
        yield


# -- Note [Pairs in lane order] ---------------------------------------------------------------


def _lane_state(kernel: Any) -> dict[str, Any] | None:
    """The kernel's lane-order state once it emitted a marked shuffle (None before, or for a
    kernel that is never emitted in lane order: the 2-D tile kernel, a tail, a scalar kernel)."""
    return kernel.__dict__.get(_STATE)


def _mark(kernel: Any) -> dict[str, Any] | None:
    """Record that ``kernel`` emits a marked shuffle; its state, or None if it never uses lane order."""
    from torch._inductor.codegen import cpp

    if type(kernel) is not cpp.CppVecKernel:  # (subclasses lay out their vectors otherwise)
        return None
    if kernel.tail_size:  # Note [Lane order and the tail]
        return None
    return kernel.__dict__.setdefault(_STATE, {"conflict": None, "pending": None})


def order(kernel: Any, var: Any) -> str | None:
    """LANES, NATURAL, or None for a value that does not vary along the vectorized loop."""
    tag = getattr(var, _ORDER, None)
    if tag is not None:
        return tag
    depends = getattr(var, "depends_on", None)
    if depends is not None and depends(kernel.itervars[kernel.tiling_idx]):
        return NATURAL
    return None


def split_call(kernel: Any) -> str:
    """The opening of a split of two float vectors in ``kernel``: marked where it may go in lane order."""
    return SPLIT if _mark(kernel) is not None else "at::vec::deinterleave2("


def join_call(kernel: Any) -> str:
    """The opening of a join of two float vectors in ``kernel`` (as ``split_call``)."""
    return JOIN if _mark(kernel) is not None else "at::vec::interleave2("


def set_order(var: Any, tag: str) -> None:
    setattr(var, _ORDER, tag)


def conflict(kernel: Any, why: str) -> None:
    """The kernel cannot be emitted in lane order (the first reason is kept, to debug a kernel by)."""
    state = _lane_state(kernel)
    if state is not None and state["conflict"] is None:
        state["conflict"] = why


def expect_marked(kernel: Any, expr: str, role: str) -> None:
    """The next value defined by ``expr`` is a marked split ("split": lane order out, of a value
    not in lane order) or join ("join": natural order out, of values not in natural order)."""
    state = _mark(kernel)
    if state is not None:
        state["pending"] = (expr, role)


def _not_in_lane_order(kernel: Any, value: Any, why: str) -> None:
    state = _lane_state(kernel)
    if state is not None and order(kernel, value) == LANES:
        conflict(kernel, f"a lane-order value {why}")


def _propagate_order(var: Any, name: str, args: Any) -> None:
    """Tag ``var``, just defined by op ``name`` of ``args``, with its order (Note [Pairs in lane order])."""
    from torch._inductor.codegen.cpp_utils import CppCSEVariable
    from torch._inductor.virtualized import V

    kernel = V.kernel
    state = _lane_state(kernel)
    if state is None or name == "load":  # (loads: the loader tags its own)
        return
    orders = {order(kernel, a) for a in args if isinstance(a, CppCSEVariable)}
    pending, role = state["pending"], None
    if pending is not None and kernel.cse.try_get(pending[0]) is var:
        role, state["pending"] = pending[1], None
    if role == "split":
        if LANES in orders:
            conflict(kernel, "a split of a lane-order value")
        set_order(var, LANES)
    elif role == "join":
        if NATURAL in orders:
            conflict(kernel, "a join of natural-order values")
        set_order(var, NATURAL)
    elif LANES in orders:
        if NATURAL in orders:
            conflict(kernel, f"{name} of lane-order and natural-order values")
        set_order(var, LANES)


def _lane_functions(kernel: Any) -> str | None:
    """C++ lambdas ``torchcx_lanes_deinterleave2`` / ``torchcx_lanes_interleave2`` for the kernel's vectors, or None
    where they have not been written (vectors other than AVX2's or AVX-512's)."""
    from torch._inductor import cpu_vec_isa

    isa = kernel.vec_isa
    if isinstance(isa, cpu_vec_isa.VecAVX512) and isa.bit_width() == 512:
        prefix, register = "_mm512", "__m512"
    elif isinstance(isa, cpu_vec_isa.VecAVX2) and isa.bit_width() == 256:
        prefix, register = "_mm256", "__m256"
    else:
        return None
    vec = "at::vec::Vectorized<float>"

    def function(name: str, first: str, second: str) -> str:
        return (
            f"auto {name} = []({vec} a, {vec} b) {{ {register} x = a, y = b; "
            f"return std::make_pair({vec}({prefix}_{first}), {vec}({prefix}_{second})); }};"
        )

    # split: (re, im) pairs of two vectors -> parts in the order 0 1 4 5 2 3 6 7 (per 128-bit
    # lane); join: its inverse.
    return " ".join(
        [
            function("torchcx_lanes_deinterleave2", "shuffle_ps(x, y, 0x88)", "shuffle_ps(x, y, 0xDD)"),
            function("torchcx_lanes_interleave2", "unpacklo_ps(x, y)", "unpackhi_ps(x, y)"),
        ]
    )


def _in_lane_order(kernel: Any, body: Any) -> Any:
    """``body`` (the kernel's code) with its marked shuffles in lane order, where that is sound."""
    state = _lane_state(kernel)
    if state is None:
        return body
    for entry in kernel.__dict__.get(_PENDING, {}).values():  # a lone stride-2 store: Inductor's own
        _not_in_lane_order(kernel, entry["value"], "stored alone at stride 2")
    functions = _lane_functions(kernel) if state["conflict"] is None and config.lane_order else None
    if functions is None:  # the ordered shuffles, unmarked
        split, join = "at::vec::deinterleave2(", "at::vec::interleave2("
    else:
        split, join = "torchcx_lanes_deinterleave2(", "torchcx_lanes_interleave2("

    def rewrite(line: Any) -> Any:
        if isinstance(line, str):
            return line.replace(SPLIT, split).replace(JOIN, join)
        text = getattr(line, "line", None)
        if isinstance(text, str) and hasattr(line, "_new_line"):
            return line._new_line(rewrite(text))
        return line

    body._lines = [*([functions] if functions else []), *(rewrite(line) for line in body._lines)]
    return body


def _stride2(kernel: Any, name: str, index: Any) -> tuple[Any, torch.dtype] | None:
    """(renamed index, dtype) of an access at stride 2 along the vectorized loop, or None."""
    from torch._inductor.virtualized import V

    dtype = V.graph.get_dtype(name)
    if dtype not in _SHUFFLED:
        return None
    index = kernel.rename_indexing(index)
    if kernel._try_get_const_stride(index, kernel.itervars[kernel.tiling_idx]) != 2:
        return None
    vectors, lanes = _shape(kernel, dtype)
    if vectors * lanes != kernel.tiling_factor:
        return None  # vectors not filled (a 16-bit tile of 32-bit elements): leave it
    return index, dtype


def _shape(kernel: Any, dtype: torch.dtype) -> tuple[int, int]:
    """(vectors, lanes) of a tile of ``dtype`` values in the type they are shuffled as."""
    vectors = kernel._get_num_vectors(torch.float32 if dtype in _SIXTEEN else dtype)
    return vectors, kernel.tiling_factor // vectors


def _cpp(dtype: torch.dtype) -> str:
    from torch._inductor.codegen.cpp_utils import DTYPE_TO_CPP

    return DTYPE_TO_CPP[dtype]


def _vector_type(ctype: str, vectors: int) -> str:
    return f"at::vec::Vectorized<{ctype}>" if vectors == 1 else f"at::vec::VectorizedN<{ctype}, {vectors}>"


def _join(dtype: torch.dtype, name: str, parts: list[str]) -> list[str]:
    """C++ lines declaring ``name``, a tile of ``dtype`` made of the shuffled vectors ``parts``."""
    ctype = _cpp(dtype)
    if dtype in _SIXTEEN:  # (float vectors; the 16-bit tile is converted from them)
        return [f"{_vector_type('float', len(parts))} {name};"] + (
            [f"{name} = {parts[0]};"] if len(parts) == 1 else [f"{name}[{k}] = {p};" for k, p in enumerate(parts)]
        )
    if len(parts) == 1:
        return [f"auto {name} = at::vec::cast<{ctype}>({parts[0]});"]
    return [f"{_vector_type(ctype, len(parts))} {name};"] + [
        f"{name}[{k}] = at::vec::cast<{ctype}>({p});" for k, p in enumerate(parts)
    ]


def _convert(kernel: Any, value: str, dst: torch.dtype, src: torch.dtype) -> str:
    """Inductor's conversion of a tile ``value`` from ``src`` to ``dst`` (its own spelling, so
    that its CSE recognises it)."""
    d, s = kernel._get_num_vectors(dst), kernel._get_num_vectors(src)
    if d == s == 1:
        return f"at::vec::convert<{_cpp(dst)}>({value})"
    return f"at::vec::convert<{_cpp(dst)},{d},{_cpp(src)},{s}>({value})"


def _bounds(kernel: Any, index: Any) -> tuple[Any, Any] | None:
    """The least and largest value of ``index`` over the kernel's loops, where it is linear in them
    with coefficients known to be non-negative (then the corners are the bounds, sizes symbolic or not)."""
    from torch._inductor.virtualized import V

    sizes = kernel.var_ranges()
    terms = sympy.Add.make_args(sympy.expand(index))
    for term in terms:
        coefficient, rest = term.as_independent(*sizes)
        if rest != 1 and (rest not in sizes or not V.graph.sizevars.statically_known_geq(coefficient, 0)):
            return None
    low = index.subs({var: 0 for var in sizes})
    high = index.subs({var: size - 1 for var, size in sizes.items()})
    return low, high


def _extent(name: str) -> Any:
    """Elements from the start of buffer ``name`` that belong to its storage, if known."""
    from torch._inductor import ir
    from torch._inductor.virtualized import V

    buffer = V.graph.try_get_buffer(name)
    if buffer is None:
        return None
    layout = buffer.get_layout()
    if isinstance(layout, ir.NonOwningLayout):
        layout = layout.as_fixed()
    try:
        return layout.storage_size()
    except AttributeError:  # pragma: no cover
        return None


def _static_span(kernel: Any) -> int | None:
    """Elements of a (re, im) span one vector iteration covers; None where the loop's
    element count is symbolic (the tail loop of a dynamic-shape kernel): such an access
    keeps Inductor's own code."""
    n = kernel.num_elems
    if isinstance(n, int):
        return 2 * n
    return 2 * int(n) if getattr(n, "is_number", False) else None


def _count(count: int, lanes: int, k: int) -> str:
    """The argument list of vector ``k``'s load or store of ``count`` elements."""
    n = max(0, min(lanes, count - k * lanes))
    return "" if n == lanes else f", {n}"


def _pair_load(kernel: Any, name: str, index: Any) -> Any:
    from torch._inductor.codegen.cpp_utils import cexpr_index
    from torch._inductor.virtualized import V

    span = _static_span(kernel)
    if kernel._load_mask is not None or span is None:
        return None
    access = _stride2(kernel, name, index)
    if access is None:
        return None
    index, dtype = access
    bounds, extent = _bounds(kernel, index), _extent(name)
    if bounds is None or extent is None:
        return None
    known = V.graph.sizevars
    if known.statically_known_lt(bounds[1] + 1, extent):
        start, half = index, 0  # the span ends one element past the last accessed
    elif known.statically_known_geq(bounds[0], 1):
        start, half = index - 1, 1  # it starts one element before the first
    else:
        return None
    ctype, shuffled = _cpp(dtype), _SHUFFLED[dtype]
    vectors, lanes = _shape(kernel, dtype)
    ptr = f"{kernel.args.input(name)} + {cexpr_index(start)}"
    split = split_call(kernel) if shuffled == "float" else "at::vec::deinterleave2("  # Note [Pairs in lane order]
    lines = []
    for k in range(vectors):
        if dtype in _SIXTEEN:  # one 16-bit vector holds the pairs of two float vectors
            raw = f"at::vec::Vectorized<{ctype}>::loadu({ptr} + {2 * k * lanes}{_count(span, 2 * lanes, k)})"
            lines.append(f"auto f{k} = at::vec::convert<float,2,{ctype},1>({raw});")
            lines.append(f"auto d{k} = {split}f{k}[0], f{k}[1]);")
            continue
        a, b = (
            f"at::vec::cast<{shuffled}>(at::vec::Vectorized<{ctype}>::loadu({ptr} + {j * lanes}{_count(span, lanes, j)}))"
            if _count(span, lanes, j) != ", 0"
            else f"at::vec::Vectorized<{shuffled}>(0)"
            for j in (2 * k, 2 * k + 1)
        )
        lines.append(f"auto d{k} = {split}{a}, {b});")
    for which in ("first", "second"):
        lines += _join(dtype, f"{which}_", [f"d{k}.{which}" for k in range(vectors)])
    if dtype in _SIXTEEN:
        convert = [_convert(kernel, v, dtype, torch.float32) for v in ("first_", "second_")]
        lines.append(f"return std::make_tuple({convert[0]}, {convert[1]}, first_, second_);")
    else:
        lines.append("return std::make_tuple(first_, second_);")
    pair = kernel.cse.generate(kernel.loads, "[&]\n{\n    " + "\n    ".join(lines) + "\n}()", dtype=dtype)
    value = kernel.cse.generate(kernel.loads, f"std::get<{half}>({pair})", dtype=dtype)
    value.is_vec = True
    if dtype in _SIXTEEN:  # its float value is at hand: Inductor's conversion to float reuses it
        wide = kernel.cse.generate(kernel.loads, f"std::get<{2 + half}>({pair})", dtype=torch.float32)
        wide.is_vec = True
        kernel.cache_dtype_convert(wide, torch.float32, value, dtype)
    value.update_on_args("load", (kernel, name, index), {})
    if shuffled == "float" and _mark(kernel) is not None:
        for var in (value, wide) if dtype in _SIXTEEN else (value,):
            set_order(var, LANES)
    return value


def _root(name: str) -> tuple[str, Any] | None:
    """(storage owner, offset of ``name`` in it): two views of one ``cat`` share an owner."""
    from torch._inductor import ir
    from torch._inductor.virtualized import V

    buffer = V.graph.try_get_buffer(name)
    if buffer is None:
        return None
    layout = buffer.get_layout()
    if isinstance(layout, ir.NonOwningLayout):
        view = layout.view
        if not isinstance(view, ir.ReinterpretView):
            return None
        return view.data.get_name(), view.layout.offset
    return name, 0


def _pair_store(kernel: Any, name: str, index: Any, value: Any, store: Any) -> bool:
    """Emit the store of ``value``; combined with its partner's where it has one (True if handled)."""
    from torch._inductor.codegen.cpp_utils import cexpr_index

    span = _static_span(kernel)
    if not getattr(value, "is_vec", False) or span is None:
        return False
    access = _stride2(kernel, name, index)
    root = _root(name)
    if access is None or root is None:
        return False
    index, dtype = access
    owner, offset = root
    at = offset + index  # the element's place in its storage
    pending = kernel.__dict__.setdefault(_PENDING, {})
    partner = None
    for delta, mine in ((1, "even"), (-1, "odd")):
        other = pending.get((owner, at + delta))
        if other is not None and other["dtype"] == dtype:
            partner, role = other, mine
            break
    if partner is None:
        before = list(kernel.stores._lines)
        store(kernel, name, index, value, None)
        added = [line for line in kernel.stores._lines if not any(line is b for b in before)]
        pending[(owner, at)] = {"name": name, "index": index, "value": value, "dtype": dtype, "lines": added}
        return True
    del pending[(owner, at + (1 if role == "even" else -1))]
    kernel.stores._lines = [line for line in kernel.stores._lines if not any(line is p for p in partner["lines"])]
    if role == "even":
        even_name, even_index, even, odd = name, index, value, partner["value"]
    else:
        even_name, even_index, even, odd = partner["name"], partner["index"], partner["value"], value
    names = {name, partner["name"]}
    ctype, shuffled = _cpp(dtype), _SHUFFLED[dtype]
    vectors, lanes = _shape(kernel, dtype)
    join = join_call(kernel) if shuffled == "float" else "at::vec::interleave2("  # Note [Pairs in lane order]
    if shuffled == "float" and _mark(kernel) is not None:
        if NATURAL in (order(kernel, even), order(kernel, odd)):
            conflict(kernel, "a join of natural-order values")
    else:
        for var in (even, odd):
            _not_in_lane_order(kernel, var, "stored in natural order")
    ptr = f"{kernel.args.output(even_name)} + {cexpr_index(even_index)}"
    parts = ["{"]
    if dtype in _SIXTEEN:  # shuffled as float: the float values Inductor converted from, if at hand
        for var, label in ((even, "e"), (odd, "o")):
            expr = kernel.get_to_dtype_expr(var, torch.float32, dtype)
            wide = kernel.cse.try_get(expr)
            parts.append(f"auto {label} = {wide if wide is not None else expr};")
        even, odd = "e", "o"
    for k in range(vectors):
        e, o = (f"{even}[{k}]", f"{odd}[{k}]") if vectors > 1 else (str(even), str(odd))
        if dtype in _SIXTEEN:
            parts.append(f"auto i{k} = {join}{e}, {o});")
            tile = f"at::vec::VectorizedN<float, 2>(i{k}.first, i{k}.second)"
            count = _count(span, 2 * lanes, k)
            if count != ", 0":
                parts.append(f"at::vec::convert<{ctype},1,float,2>({tile}).store({ptr} + {2 * k * lanes}{count});")
            continue
        parts.append(f"auto i{k} = {join}at::vec::cast<{shuffled}>({e}), at::vec::cast<{shuffled}>({o}));")
        for j, half in ((2 * k, "first"), (2 * k + 1, "second")):
            count = _count(span, lanes, j)
            if count != ", 0":
                parts.append(f"at::vec::cast<{ctype}>(i{k}.{half}).store({ptr} + {j * lanes}{count});")
    parts.append("}")
    line = " ".join(parts)

    kernel.stores.writeline(_pair_line_type()(sorted(names), line))
    return True


@functools.cache
def _pair_line_type() -> type:
    """A stored line that two buffers write: kept only while neither is removed.

    (Made on first use, so that importing torchcx does not import Inductor's code generation.)
    """
    from torch._inductor.codegen.common import DeferredLine, is_buffer_removed

    class PairLine(DeferredLine):
        def __init__(self, names: list[str], line: str) -> None:
            super().__init__(names[0], line)
            self.names = names

        def __call__(self) -> str | None:
            return None if any(is_buffer_removed(n) for n in self.names) else self.line

        def _new_line(self, line: str) -> PairLine:
            return PairLine(self.names, line)

    return PairLine
