"""Threads compiling and running torchcx functions at once (Note [Patches and threads] in
torchcx/_patching.py, Note [Settings per thread] in torchcx/config.py).

torchcx's Inductor adjustments and its settings used to be installed process-wide by
patch-and-restore: a lazily compiled backward graph (outside Dynamo's compile lock)
overlapping another compile could leave the patches installed for good, compile without
them, or show them to a stock ``torch.compile`` in another thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

import torchcx
from torchcx import config
from torchcx._inductor_patches import inductor_patches, quiet_complex_warning

aten = torch.ops.aten


def installed() -> dict[str, Any]:
    """Everything the adjustments replace, as it stands now."""
    from torch._inductor import ir, lowering
    from torch._inductor.codegen import cpp

    vec = cpp.CppVecOverrides.__dict__
    return {
        "expm1": vec.get("expm1"),
        "bitwise_or": vec.get("bitwise_or"),
        "to_dtype_bitcast": vec.get("to_dtype_bitcast"),
        "should_realize_on_reuse": ir.StorageBox.__dict__.get("should_realize_on_reuse"),
        "make_loader": ir.Pointwise.__dict__.get("make_loader"),
        "view.dtype": lowering.lowerings.get(aten.view.dtype),
        "load": cpp.CppVecKernel.load,
        "store": cpp.CppVecKernel.store,
        "get_to_dtype_expr": cpp.CppVecKernel.get_to_dtype_expr,
        "select_tiling": cpp.TilingSelect.select_tiling,
        "stride_at_vec_range": cpp.stride_at_vec_range,
        "warn_complex": lowering._warn_complex_not_supported,
        "cache_key_tag": torch.compiler.config.cache_key_tag,
        "torchcx settings": config.compile_settings(),
    }


def vec_expm1() -> str:
    from torch._inductor.codegen import cpp

    return cpp.CppVecOverrides.expm1("x")


def run_threads(*targets: Callable[[], None], timeout: float = 120) -> None:
    """Run ``targets`` in threads at once; re-raise the first error one of them had."""
    errors: list[BaseException] = []

    def guarded(target: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                target()
            except BaseException as e:  # noqa: BLE001  (reported in the main thread)
                errors.append(e)

        return run

    threads = [threading.Thread(target=guarded(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]


@pytest.fixture
def nothing_leaks() -> Iterator[None]:
    before = installed()
    yield
    assert installed() == before


def test_patch_windows_take_turns_and_stay_in_their_thread(nothing_leaks: None) -> None:
    # A and B each install the patches; B tries while A holds them, and A leaves first. When
    # both could hold them at once, B saved A's patches as "the originals" and put them back
    # at its end, for good (the fixture sees that).
    a_inside, b_inside, a_done = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def a() -> None:
        with inductor_patches(), quiet_complex_warning():
            seen["a"] = vec_expm1()
            a_inside.set()
            seen["b entered while a held them"] = b_inside.wait(timeout=0.5)
            seen["main thread while a held them"] = main_sees.wait(timeout=5)
        a_done.set()

    def b() -> None:
        assert a_inside.wait(timeout=30)
        with inductor_patches():
            b_inside.set()
            seen["b"] = vec_expm1()
            seen["a done when b entered"] = a_done.wait(timeout=5)

    main_sees = threading.Event()
    stock = vec_expm1()
    thread_a, thread_b = threading.Thread(target=a), threading.Thread(target=b)
    thread_a.start()
    thread_b.start()
    assert a_inside.wait(timeout=30)
    seen["main"] = vec_expm1()  # another thread, while A holds the patches: Inductor's own
    main_sees.set()
    thread_a.join(30)
    thread_b.join(30)
    assert seen == {
        "a": "x.expm1()",  # Note [Accurate expm1], in force in the thread that compiles
        "main": stock,
        "b entered while a held them": False,
        "main thread while a held them": True,
        "b": "x.expm1()",
        "a done when b entered": True,
    }


def test_settings_patched_in_one_thread_stay_there(nothing_leaks: None) -> None:
    # Patch blocks in two threads that end in the order they began (not nested): the last
    # one used to restore the other's value for good (the fixture sees that), and each
    # thread read the other's value meanwhile.
    a_inside, b_inside, a_done, other_read = (threading.Event() for _ in range(4))
    seen: dict[str, str] = {}
    unpatched = config.matmul_strategy

    def a() -> None:
        with config.patch(matmul_strategy="3m"):
            a_inside.set()
            assert b_inside.wait(timeout=30)
            seen["a"] = config.matmul_strategy
        a_done.set()

    def b() -> None:
        assert a_inside.wait(timeout=30)
        with config.patch(matmul_strategy="block"):
            b_inside.set()
            assert a_done.wait(timeout=30) and other_read.wait(timeout=30)
            seen["b"] = config.matmul_strategy

    def other() -> None:  # a thread that patches nothing, while B's block is open
        assert b_inside.wait(timeout=30)
        seen["other"] = config.matmul_strategy
        other_read.set()

    run_threads(a, b, other)
    assert seen == {"a": "3m", "b": "block", "other": unpatched}


# -- compiling and running at once ------------------------------------------------------------


def complex_step(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return ((x * w).expm1() * x.conj() + torch.sin(w)).abs().sum()


def complex_forward(a: torch.Tensor) -> torch.Tensor:
    return torch.cos(a) * a.conj() + a.exp()


def real_step(x: torch.Tensor) -> torch.Tensor:
    return (torch.expm1(x) * torch.tanh(x)).sum()


def test_threads_compile_and_run_different_functions(nothing_leaks: None) -> None:
    # One thread trains through torchcx (its backward graph compiles lazily, outside Dynamo's
    # lock), one runs a torchcx forward, one a stock torch.compile with a backward of its own;
    # all start together, for a few rounds, each from a clean Dynamo.
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(8, dtype=torch.complex64, generator=gen) * 0.5
    w = torch.randn(8, dtype=torch.complex64, generator=gen) * 0.5
    a = torch.randn(8, dtype=torch.complex64, generator=gen)
    r = torch.randn(8, generator=gen)

    def grads(fn: Callable[..., torch.Tensor], *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        leaves = [t.detach().clone().requires_grad_() for t in inputs]
        loss = fn(*leaves)
        loss.backward()
        return (loss.detach(), *(t.grad for t in leaves))

    expected_train = grads(complex_step, x, w)
    expected_forward = complex_forward(a)
    expected_real = grads(real_step, r)

    def one_round() -> dict[str, Any]:
        barrier = threading.Barrier(3, timeout=60)
        train = torchcx.compile(complex_step)
        forward = torchcx.compile(complex_forward)
        stock = torch.compile(real_step)
        results: dict[str, Any] = {}

        def run_train() -> None:
            barrier.wait()
            results["train"] = grads(train, x, w)

        def run_forward() -> None:
            barrier.wait()
            results["forward"] = forward(a)

        def run_stock() -> None:
            barrier.wait()
            results["stock"] = grads(stock, r)

        run_threads(run_train, run_forward, run_stock)
        return results

    for _ in range(3):
        torch._dynamo.reset()
        results = one_round()
        torch.testing.assert_close(results["train"], expected_train)
        torch.testing.assert_close(results["forward"], expected_forward)
        torch.testing.assert_close(results["stock"], expected_real)
    torch._dynamo.reset()
