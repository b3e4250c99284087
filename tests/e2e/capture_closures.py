"""Issue 42: closures made during tracing that are live at a graph break
(or returned) are made again after the graph: the same code, globals,
defaults and keyword defaults, and closure cells that are one object per
cell (two closures over one variable share it), the compiled frame's own
cell for its cell variables (a write after the break, in the resume
function or through another closure, is seen by the closure as in eager).
Before, such a break was not taken ("cannot rebuild a closure made during
tracing") and the whole frame ran uncompiled. The resume function receives
the new closure object every call: nested functions are guarded by their
code, globals and defaults, not their identity, so it is one compile.
Each case: compiled vs eager over several calls, and graphs/breaks."""
import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish


def same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.allclose(a, b, atol=1e-6)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def run_case(name, fn, make_args, graphs, breaks, calls=3):
    tracejit.reset()
    compiled = tracejit.compile(fn, backend=BACKEND)
    for i in range(calls):
        want = fn(*make_args(i))
        got = compiled(*make_args(i))
        check(same(got, want), f"{name}: call {i} matches eager ({got} vs {want})")
    c = tracejit.counters()
    ex = tracejit.explain(fn)(*make_args(0))
    why = "; ".join(r.reason[:160] for r in ex.break_reasons)
    check_equal((ex.graph_count, ex.graph_break_count), (graphs, breaks), f"{name}: explain graphs/breaks ({why})")
    check(not any("closure" in r.reason for r in ex.break_reasons), f"{name}: no closure reason ({why})")
    return c


# 1. a closure over a cell variable, live across a break
def scale_after_break(x):
    k = x.sum() * 0 + 2

    def scale(t):
        return t * k

    y = scale(x)
    print("break")
    return scale(y) + 1


c = run_case("closure over a cell, live at a break", scale_after_break, lambda i: (torch.arange(4.0) + i,), 2, 1)
check(c["frames_traced"] <= 3, f"closure at a break: the resume function compiles once ({c['frames_traced']} traces)")


# 2. the variable rebound after the break: the closure sees the new value (one shared cell)
def rebound(x):
    k = 2

    def scale(t):
        return t * k

    y = scale(x)
    print("break")
    k = 5
    return scale(y)


run_case("cell rebound after the break", rebound, lambda i: (torch.arange(3.0) + i,), 2, 1)


# 3. two closures sharing one cell, one writes it (nonlocal) after the break
def counter(x):
    n = 0

    def bump():
        nonlocal n
        n += 1
        return n

    def read():
        return n

    bump()
    y = x * 2
    print("break")
    bump()
    return y + read(), read()


run_case("two closures over one cell", counter, lambda i: (torch.ones(3) * i,), 2, 1)


# 4. closures made by an inlined helper (a cell of the inlined frame), with defaults
def make_affine(a, b=1.0, *, c=3.0):
    def affine(t, d=2.0, *, e=4.0):
        return t * a + b + c + d + e
    return affine


def inlined_maker(x):
    f = make_affine(x.sum(), b=0.5)
    y = f(x)
    print("break")
    return f(y)


run_case("closure made by an inlined function, with defaults", inlined_maker, lambda i: (torch.arange(3.0) * (i + 1),), 2, 1)


# 5. a recursive nested function (its cell holds itself), live at a break
def recursive(x):
    def power(t, n):
        return t if n == 0 else power(t, n - 1) * t

    y = power(x, 2)
    print("break")
    return power(y, 1)


run_case("recursive nested function", recursive, lambda i: (torch.arange(3.0) + i,), 2, 1)


# 6. a closure returned from a fully compiled frame
def returns_closure(x):
    k = x * 3

    def add(t):
        return t + k

    return add


tracejit.reset()
compiled = tracejit.compile(returns_closure, backend=BACKEND)
x = torch.arange(3.0)
f_eager, f_comp = returns_closure(x), compiled(x)
check(torch.equal(f_comp(torch.ones(3)), f_eager(torch.ones(3))), "a returned closure computes as eager's")
check_equal(f_comp.__code__, f_eager.__code__, "a returned closure has the function's code")
ex = tracejit.explain(returns_closure)(x)
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "a returned closure: one graph")

finish()
