"""Grad mode is per thread: one no_grad()/enable_grad() object shared by
threads (a decorated function) gives each thread back its own mode."""
from __future__ import annotations

import threading

import pytest

import minigrad


def _run_interleaved(decorator, start_modes):
    """Two threads enter one decorated function, both wait inside, then leave
    in the order first-in, first-out (the order that swapped their modes when
    the saved modes sat on one shared stack)."""
    inside = threading.Barrier(2)
    first_left = threading.Event()
    results, errors = {}, []

    @decorator
    def work(name):
        results[name + " inside"] = minigrad.is_grad_enabled()
        inside.wait(timeout=10)
        if name == "b":
            first_left.wait(timeout=10)     # b leaves after a

    def thread(name, mode):
        try:
            minigrad.set_grad_enabled(mode)
            work(name)
            if name == "a":
                first_left.set()
            results[name + " after"] = minigrad.is_grad_enabled()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    a = threading.Thread(target=thread, args=("a", start_modes[0]))
    b = threading.Thread(target=thread, args=("b", start_modes[1]))
    a.start()
    b.start()
    a.join(20)
    b.join(20)
    assert not errors, errors
    return results


@pytest.mark.parametrize("make, mode_inside", [(minigrad.no_grad, False),
                                               (minigrad.enable_grad, True)])
@pytest.mark.parametrize("start_modes", [(True, False), (False, True)])
def test_shared_decorator_restores_each_threads_mode(make, mode_inside, start_modes):
    results = _run_interleaved(make(), start_modes)
    assert results["a inside"] is mode_inside and results["b inside"] is mode_inside
    assert results["a after"] is start_modes[0]
    assert results["b after"] is start_modes[1]


def test_shared_context_manager_object_across_threads():
    ctx = minigrad.no_grad()
    inside = threading.Barrier(2)
    after = {}

    def thread(name, mode):
        minigrad.set_grad_enabled(mode)
        with ctx:
            inside.wait(timeout=10)
        after[name] = minigrad.is_grad_enabled()

    threads = [threading.Thread(target=thread, args=(n, m)) for n, m in (("a", True),
                                                                         ("b", False))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert after == {"a": True, "b": False}


def test_a_new_thread_starts_with_grad_enabled():
    seen = []
    with minigrad.no_grad():
        t = threading.Thread(target=lambda: seen.append(minigrad.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_no_grad_decorates_a_generator_function(torch):
    x, tx = minigrad.tensor([1.0], requires_grad=True), torch.tensor([1.0], requires_grad=True)

    @torch.no_grad()
    def torch_gen():
        yield (tx * 2).requires_grad

    @minigrad.no_grad()
    def gen():
        yield (x * 2).requires_grad

    assert list(torch_gen()) == [False]
    assert list(gen()) == [False]


def test_set_grad_enabled_as_a_context_manager(torch):
    with torch.set_grad_enabled(False):
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled()
    try:
        with minigrad.set_grad_enabled(False):
            assert not minigrad.is_grad_enabled()
    finally:
        observed = minigrad.is_grad_enabled()
        minigrad.set_grad_enabled(True)        # never leak the mode into other tests
    assert observed


def test_a_decorated_generator_gives_the_caller_its_mode_back_at_each_yield():
    x = minigrad.tensor([1.0], requires_grad=True)

    @minigrad.no_grad()
    def gen(n):
        got = []
        for _ in range(n):
            sent = yield minigrad.is_grad_enabled()
            got.append(((x * 2).requires_grad, sent))
        return got

    g = gen(2)
    assert next(g) is False and minigrad.is_grad_enabled()      # the caller's mode
    assert g.send("a") is False and minigrad.is_grad_enabled()
    with pytest.raises(StopIteration) as stop:
        g.send("b")
    assert stop.value.value == [(False, "a"), (False, "b")]   # the return value comes out

    @minigrad.enable_grad()
    def catching():
        try:
            yield 1
        except ValueError:
            yield minigrad.is_grad_enabled()

    with minigrad.no_grad():
        c = catching()
        assert next(c) == 1
        assert c.throw(ValueError("x")) is True and not minigrad.is_grad_enabled()
        c.close()
        assert not minigrad.is_grad_enabled()
