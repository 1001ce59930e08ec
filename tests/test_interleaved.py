"""Stride-2 (re, im) pairs in the generated CPU kernels (Note [Interleaved access]).

Two kinds of checks: the generated code is vectorized the way the Note says (it fails when
the patches stop taking effect), and values are eager's exactly on the shapes where the
shuffles have edges: tails shorter than a vector, an odd number of elements (the span read
past the last element must not leave the buffer), offsets by one, views with a step, stores
whose partner is missing, 16-bit parts.
"""

from __future__ import annotations

import pytest
import torch
from torch._inductor.utils import run_and_get_code

import torchcx
from torchcx import config
from torchcx.bench.workloads.rotary import apply_rotary_emb, precompute_freqs_cis


def compiled(fn, *args):
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True):
        out, code = run_and_get_code(torchcx.compile(fn), *args)
    return out, "\n".join(code)


def assert_same_as_scalar_code(fn, *args):
    """The shuffles change how memory is accessed, never what is computed: bit for bit the
    result of the code compiled without them; and as close to eager as compiled code is."""
    out, code = compiled(fn, *args)
    with config.patch(interleaved_access=False):
        plain, _ = compiled(fn, *args)
    torch.testing.assert_close(out, plain, rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(out, fn(*args))
    return code


def rope_args(dtype, t=4, h=2, d=64):
    g = torch.Generator().manual_seed(0)
    xq = torch.randn(1, t, h, d, generator=g).to(dtype)
    xk = torch.randn(1, t, h, d, generator=g).to(dtype)
    return xq, xk, precompute_freqs_cis(d, t)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_rotary_embedding_is_vectorized(dtype):
    code = assert_same_as_scalar_code(apply_rotary_emb, *rope_args(dtype))
    assert split_in(code) and "interleave2(" in code
    # Inductor's element-at-a-time path for stride-2 vectors is gone, and no float32
    # buffer is written and converted in a kernel of its own (Note [Conversions of packed pairs]).
    assert "tmpbuf" not in code
    assert code.count('extern "C"') == 1
    if dtype != torch.float32:
        # the conversions run on the parts, so no float32 copy of the rotated pairs is
        # written and read back (it halved rope-bf16's speed when the pass stopped applying)
        assert "float* out_ptr" not in code


def test_switched_off_by_config():
    args = rope_args(torch.float32)
    with config.patch(interleaved_access=False):
        _, code = compiled(apply_rotary_emb, *args)
    assert "deinterleave2" not in code


def products(z, w):
    return z * w + z.conj()


# A stride-2 load (words are split by deinterleave2 too), in either order (Note [Pairs in lane order]).
STRIDED_LOADS = ("auto d0 = at::vec::deinterleave2(", "auto d0 = torchcx_lanes_deinterleave2(")


def split_in(code):
    return "at::vec::deinterleave2(" in code or "torchcx_lanes_deinterleave2(" in code


def c128(*shape):
    return torch.randn(*shape, dtype=torch.complex128)


def c64(*shape):
    return torch.randn(*shape, dtype=torch.complex64)


def every_other(z, w):
    return products(z[:, ::2], w)


# name -> (program, inputs, whether the kernel uses the shuffles)
CASES = {
    # complex128 crosses as float64 pairs: stride-2 loads and paired stores, with a tail.
    "complex128 tail": (products, lambda: (c128(3, 37), c128(3, 37)), True),
    "complex128 transposed": (products, lambda: (c128(19, 6).t(), c128(6, 19)), True),
    "complex128 one element": (products, lambda: (c128(1), c128(1)), False),  # (no vector loop)
    # complex64 words read with a step of 2 (int64 at stride 2) from a whole input.
    "complex64 step inside": (every_other, lambda: (c64(5, 66), c64(5, 33)), True),
    # A view with a step passed in: its layout ends at its last element, and the memory
    # before its first is not known to be there at the next call (an input's storage
    # offset is not guarded), so neither span is known to be inside: Inductor's own code.
    "complex64 step passed in": (products, lambda: (c64(5, 66)[:, 1::2], c64(5, 33)), False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_pairs_match_eager(case):
    program, make, shuffled = CASES[case]
    code = assert_same_as_scalar_code(program, *make())
    assert any(load in code for load in STRIDED_LOADS) == shuffled


def parts_from_steps(x, w):
    # Parts read from one real buffer of 2n + 1 floats at stride 2: re from its elements
    # 2, 4, ..., 2n (the last element of the buffer: the span must start one element
    # early), im from 1, 3, ..., 2n - 1.
    return torch.complex(x[2::2], x[1:-1:2]) * w


@pytest.mark.parametrize("n", [1, 17, 33])
def test_spans_stay_inside_the_buffer(n):
    x = torch.randn(2 * n + 1)
    w = torch.randn(n, dtype=torch.complex64)
    assert_same_as_scalar_code(parts_from_steps, x, w)


def update_every_other(x, phase):
    # In-place writes of every other complex64 word: a stride-2 store with no partner.
    x[:, ::2].mul_(phase)
    return x


def test_store_without_partner():
    x = torch.randn(4, 38, dtype=torch.complex64)
    phase = torch.randn(4, 19, dtype=torch.complex64)
    want = update_every_other(x.clone(), phase)
    got = x.clone()
    out, _ = compiled(update_every_other, got, phase)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert out.data_ptr() == got.data_ptr()


def test_dynamic_shapes_keep_inductors_code_for_symbolic_tails():
    # found by the differential fuzzer: a second shape recompiles with a symbolic size,
    # whose tail loop has a symbolic element count; the shuffles need a static one
    torch._dynamo.reset()
    fn = torchcx.compile(lambda t: (t * 1j).mean(-1))
    for rows, n in ((64, 1), (4096, 2), (4093, 3)):
        x = torch.randn(rows, n, dtype=torch.complex64)
        torch.testing.assert_close(fn(x), (x * 1j).mean(-1))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_sixteen_bit_pairs_with_tail(dtype):
    # 19 pairs per row: a tile of 16 and a tail of 3 (or of 19 in a 32-lane bfloat16 tile).
    code = assert_same_as_scalar_code(apply_rotary_emb, *rope_args(dtype, t=3, h=1, d=38))
    assert "deinterleave2" in code


def update(x, phase, y):
    x.mul_(phase)
    x.add_(y)
    return x


def test_complex64_words_are_shuffled():
    # Note [Words as pairs]: the words are split by one deinterleave per pair of vectors and
    # joined by one interleave, no 64-bit masking or narrowing left in the kernel.
    x, phase, y = c64(4, 64), c64(64), c64(4, 64)
    want = update(x.clone(), phase, y)
    got = x.clone()
    out, code = compiled(update, got, phase, y)
    torch.testing.assert_close(got, want)
    kernel = code[code.index('extern "C"') :]
    assert "deinterleave2" in kernel and "interleave2" in kernel
    assert "at::vec::convert<int32_t,1,int64_t,2>" not in kernel
    assert "4294967295" not in kernel.split("interleave2(")[-1]  # (the mask is dead code before the join)
    # Note [Full vector loads]: the main loop loads whole vectors of words, with no count
    # (ATen's AVX2 int64 loadu with a count goes through a stack buffer).
    loads = [line for line in kernel.splitlines() if "VectorizedN<int64_t,2>::loadu(" in line]
    assert loads and not any("), static_cast<int64_t>(" in line for line in loads)
    assert out is got or out.data_ptr() == got.data_ptr()


def test_a_copy_of_words_copies_words():
    # Note [Packed form]: a permuted copy of a complex64 input on its way to a GEMM (an einsum's
    # operand) moves its words; unpacking and packing them again in the copy took 2.7x as long.
    def permuted_product(a, b):
        return torch.bmm(a.permute(2, 0, 1).contiguous(), b)

    a, b = c64(8, 4, 16), c64(16, 4, 5)
    with config.patch(matmul_strategy="native"):  # the vendor's cgemm reads the words
        out, code = compiled(permuted_product, a, b)
    torch.testing.assert_close(out, permuted_product(a, b))
    kernel = code[code.index('extern "C"') :]
    assert "interleave2" not in kernel and "float" not in kernel  # int64 words in, the same words out


@pytest.mark.parametrize("make", [lambda: c64(3, 37), lambda: c64(40, 3).t(), lambda: c64(2, 66)[:, 1::2]])
def test_words_as_pairs_compute_the_same(make):
    # The shuffles are bit-exact rewrites: compiled with and without them, the same bits
    # (for exact arithmetic: where they change whether a loop is vectorized, a vectorized
    # transcendental may round differently from the scalar one, as eager's own kernels do).
    x, y = make(), make()
    assert_same_as_scalar_code(products, x, y)

    def transcendental(a, b):
        return torch.exp(a) * b.conj() - a.abs()

    out, _ = compiled(transcendental, x, y)
    torch.testing.assert_close(out, transcendental(x, y))


def test_broadcast_sines_are_computed_once():
    # Note [Heavy values computed once]: the rotation's sines and cosines, [T, D/2] values
    # broadcast over batch and heads, get a kernel of their own instead of being evaluated
    # again for every element of q and k.
    from torchcx.bench.workloads.rotary import apply_rotary_emb_from_positions, inverse_frequencies

    xq, xk, _ = rope_args(torch.float32, t=8, h=4, d=32)
    args = (xq, xk, torch.arange(8.0), inverse_frequencies(32))
    out, code = compiled(apply_rotary_emb_from_positions, *args)
    for got, want in zip(out, apply_rotary_emb_from_positions(*args)):
        torch.testing.assert_close(got, want)
    assert "empty_strided_cpu((8, 16), (16, 1), torch.float32)" in code  # the [T, D/2] cosines and sines
    assert code.count(".sin()") + code.count("std::sin(") == 1
    # ... evaluated in a loop nest of their own, not inside the rotation's (which reads the pairs)
    nest = code[: code.index(".sin()")].rsplit("for(int64_t x0", 1)[1]
    assert "deinterleave2" not in nest


def test_off_on_another_torch(monkeypatch, caplog):
    # The shuffles read Inductor 2.13's internals and spelling: on another minor they stay
    # off, and say so.
    from torchcx import _inductor_patches

    assert _inductor_patches._written_for_this_torch.__wrapped__()
    monkeypatch.setattr(torch, "__version__", "2.14.0+cpu")
    with caplog.at_level("WARNING"):
        assert not _inductor_patches._written_for_this_torch.__wrapped__()
    assert "written for torch 2.13" in caplog.text


# -- Note [Pairs in lane order] ----------------------------------------------------------------


def lane_order_here():
    from torch._inductor import cpu_vec_isa

    return isinstance(cpu_vec_isa.pick_vec_isa(), (cpu_vec_isa.VecAVX2, cpu_vec_isa.VecAVX512))


def code_without_lane_order(fn, *args):
    with config.patch(lane_order=False):
        return compiled(fn, *args)


def planar_times(z, r):
    return z * r  # r: a real tensor read in natural order beside z's words


def times_positions(z):
    return z * torch.arange(z.shape[-1])  # index values: natural order


def modulus_of_product(z, w):
    return (z * w).abs()  # a real result, stored by Inductor's own store


def rotated_sum(z):
    return (z * 1j).sum(-1)  # a reduction over the vectorized loop


def special_values(*shape):
    """nan+inf*j everywhere: its sqrt is inf+inf*j, found by Inductor's scalarized isinf, and
    nan+nan*j where isinf misses it."""
    return torch.full(shape, complex(float("nan"), float("inf")), dtype=torch.complex64)


LANE_ORDER = {  # name -> (program, inputs)
    "words updated in place": (update, lambda: (c64(4, 64), c64(64), c64(4, 64))),
    "words, a tail": (products, lambda: (c64(3, 37), c64(3, 37))),
    # Note [Lane order and the tail]: 45 pairs, a vectorized tail of 5 on AVX2 (8 lanes) and
    # of 13 on AVX-512 (16 lanes); the scalarized isinf sees its first 5 or 13 lanes, which
    # lane order fills with elements 0 1 4 5 2 (AVX2) or 0 1 8 9 2 3 10 11 4 5 12 13 6 (AVX-512).
    "a tail, a scalarized op": (torch.sqrt, lambda: (special_values(45),)),
    "rotary float32": (apply_rotary_emb, lambda: rope_args(torch.float32)),
    "rotary bfloat16": (apply_rotary_emb, lambda: rope_args(torch.bfloat16)),
}
NATURAL_ORDER = {
    "words beside a planar tensor": (planar_times, lambda: (c64(4, 64), torch.randn(4, 64))),
    "words times index values": (times_positions, lambda: (c64(4, 64),)),
    "a real result": (modulus_of_product, lambda: (c64(4, 64), c64(4, 64))),
    "a reduction": (rotated_sum, lambda: (c64(4, 64),)),
}


@pytest.mark.parametrize("case", list(LANE_ORDER))
def test_pairs_in_lane_order(case):
    # Only pairs along the vectorized loop: the kernel splits and joins them within 128-bit
    # lanes, and computes bit for bit what it computes with the ordered shuffles.
    program, make = LANE_ORDER[case]
    args = make()
    out, code = compiled(program, *[a.clone() for a in args])
    ordered, ordered_code = code_without_lane_order(program, *[a.clone() for a in args])
    torch.testing.assert_close(out, ordered, rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(out, program(*[a.clone() for a in args]), equal_nan=True)
    assert "torchcx_lanes_deinterleave2(" not in ordered_code
    assert ("torchcx_lanes_deinterleave2(" in code) == lane_order_here()


@pytest.mark.parametrize("case", list(NATURAL_ORDER))
def test_values_in_natural_order_keep_the_ordered_shuffles(case):
    # A kernel that combines pair parts with anything read or made in natural order, stores a
    # part by Inductor's own store or reduces it, must not use lane order: its values would be
    # permuted. The values are checked against eager; the code, for the ordered shuffles.
    program, make = NATURAL_ORDER[case]
    args = make()
    out, code = compiled(program, *args)
    torch.testing.assert_close(out, program(*args))
    assert "at::vec::deinterleave2(" in code
    assert "torchcx_lanes_deinterleave2(" not in code
