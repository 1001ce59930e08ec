"""Note [Streaming stores] (src/torchcx/_streaming_stores.py): which stores are streamed, and
that a streamed kernel computes the same bits as one with Inductor's stores."""

from __future__ import annotations

import pytest
import torch

import torchcx
from torchcx import _kernel_batches, _streaming_stores

KERNEL = """\
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(const float* in_ptr0,
                       float* out_ptr0,
                       int64_t* out_ptr1,
                       float* out_ptr2)
{
    #pragma omp parallel num_threads(2)
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(64L); x0+=static_cast<int64_t>(16L))
            {
                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0));
                tmp0.store(out_ptr0 + static_cast<int64_t>(x0));
                tmp1.store(out_ptr1 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                { auto i0 = torchcx_lanes_interleave2(tmp0, tmp0); at::vec::cast<float>(i0.first).store(out_ptr0 + static_cast<int64_t>(2L*x0) + 0); at::vec::cast<float>(i0.second).store(out_ptr0 + static_cast<int64_t>(2L*x0) + 16); }
                tmp0.store(out_ptr2 + static_cast<int64_t>(x0));
                auto tmp2 = at::vec::Vectorized<float>::loadu(out_ptr2 + static_cast<int64_t>(x0));
            }
            for(int64_t x0=static_cast<int64_t>(64L); x0<static_cast<int64_t>(70L); x0+=static_cast<int64_t>(1L))
            {
                out_ptr0[static_cast<int64_t>(x0)] = tmp3;
            }
        }
    }
}
"""


def test_only_the_marked_outputs_that_are_only_stored_are_streamed():
    marked = "// torchcx streaming stores: out_ptr0 out_ptr1 out_ptr2\n" + KERNEL
    body = _streaming_stores.streamed(marked)
    assert "torchcx streaming stores" not in body
    assert "torchcx_stream::store(tmp0, out_ptr0 + static_cast<int64_t>(x0));" in body
    assert "torchcx_stream::store(tmp1, out_ptr1 + static_cast<int64_t>(x0), static_cast<int64_t>(16));" in body
    # two stores in one statement block, each with its own value
    assert "torchcx_stream::store(at::vec::cast<float>(i0.first), out_ptr0 + static_cast<int64_t>(2L*x0) + 0);" in body
    assert (
        "torchcx_stream::store(at::vec::cast<float>(i0.second), out_ptr0 + static_cast<int64_t>(2L*x0) + 16);" in body
    )
    # out_ptr2 is read back in the kernel: left alone; the scalar tail store too
    assert "tmp0.store(out_ptr2 + static_cast<int64_t>(x0));" in body
    assert "out_ptr0[static_cast<int64_t>(x0)] = tmp3;" in body
    assert body.count(".store(out_ptr") == 1
    # every thread of the parallel region fences, and so does the calling thread
    assert "int tid = omp_get_thread_num(); torchcx_stream::Fence torchcx_thread_fence;" in body
    assert body.index("torchcx_stream::Fence torchcx_fence;") < body.index("#pragma omp parallel")
    # nothing to stream: the source is left as it is
    assert _streaming_stores.streamed(KERNEL) == KERNEL
    only_read = "// torchcx streaming stores: out_ptr2\n" + KERNEL
    assert _streaming_stores.streamed(only_read) == KERNEL
    # a parallel region that does not start as Inductor's do: no thread of it could fence
    unknown_region = marked.replace("int tid = omp_get_thread_num();", "")
    assert _streaming_stores.streamed(unknown_region) == KERNEL.replace("int tid = omp_get_thread_num();", "")


def program(x, y):
    z = x * y
    return z, z.abs().to(torch.bfloat16), z.real > 0, torch.view_as_real(z).flatten(-2) * 2


@pytest.fixture
def library_sources(monkeypatch):
    """The source of every kernel library built, as built."""
    sources = []
    build = _kernel_batches.library_source

    def recorded(kernels):
        sources.append(build(kernels))
        return sources[-1]

    monkeypatch.setattr(_kernel_batches, "library_source", recorded)
    return sources


def _compiled(fn, *args, dynamic=None):
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True):
        return torchcx.compile(fn, dynamic=dynamic)(*args)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_kernel_larger_than_the_cache_streams_its_outputs(threads, library_sources, monkeypatch):
    # The cache made small, so that a test-sized kernel is "larger than the cache": float32,
    # bfloat16, bool outputs and complex64 words, whole vectors and tails (1000 is not a
    # multiple of 16), one thread and a parallel region.
    monkeypatch.setattr(_streaming_stores, "last_level_cache_bytes", lambda: 16 << 10)
    monkeypatch.setattr(_streaming_stores, "_MIN_STREAMED_BYTES", 1 << 10)
    x, y = (torch.randn(4, 1000, dtype=torch.complex64) for _ in range(2))
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        streamed = _compiled(program, x, y)
        assert any("torchcx_stream::store(" in s for s in library_sources)
        assert any("torchcx_stream::Fence torchcx_thread_fence;" in s for s in library_sources) == (threads > 1)
        library_sources.clear()
        with torchcx.config.patch(streaming_stores=False):
            plain = _compiled(program, x, y)
        assert not any("torchcx_stream::store(" in s for s in library_sources)
    finally:
        torch.set_num_threads(previous)
    for a, b, e in zip(streamed, plain, program(x, y)):
        assert torch.equal(a, b)  # the same bits: only how they reach memory differs
        torch.testing.assert_close(a, e)


def test_a_kernel_of_sizes_known_only_at_run_time_keeps_its_stores(library_sources, monkeypatch):
    # compiled for one size, it may run at another that fits in the cache
    monkeypatch.setattr(_streaming_stores, "last_level_cache_bytes", lambda: 16 << 10)
    monkeypatch.setattr(_streaming_stores, "_MIN_STREAMED_BYTES", 1 << 10)
    x, y = (torch.randn(4, 1000, dtype=torch.complex64) for _ in range(2))
    for a, e in zip(_compiled(program, x, y, dynamic=True), program(x, y)):
        torch.testing.assert_close(a, e)
    assert library_sources and not any("torchcx_stream::store(" in s for s in library_sources)


def test_a_kernel_that_fits_in_the_cache_keeps_its_stores(library_sources):
    x, y = (torch.randn(4, 1000, dtype=torch.complex64) for _ in range(2))
    _compiled(program, x, y)
    assert library_sources and not any("torchcx_stream::store(" in s for s in library_sources)
