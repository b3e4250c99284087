"""Inlining, closures and side effects: calls of user code are traced into
the caller's graph (one graph), with eager's results; what cannot be
inlined breaks at the caller's call, and explain says where."""
import contextlib
import functools
import io

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

SCALE = 3.0


def same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.allclose(a, b, atol=1e-5)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def expect(name, fn, args, graphs=1, breaks=0):
    tracejit.reset()
    want = fn(*args)
    got = tracejit.compile(fn, backend=BACKEND)(*args)
    check(same(got, want), f"{name}: matches eager")
    ex = tracejit.explain(fn)(*args)
    check_equal((ex.graph_count, ex.graph_break_count), (graphs, breaks), f"{name}: graphs/breaks")
    return ex


def helper(a, b=2, *rest, scale=1.0, **extra):
    return (a * b + sum(rest)) * scale + extra.get("shift", 0)


def kw_and_defaults(x):
    return helper(x), helper(x, 3, 1, 2, scale=0.5, shift=1)


expect("defaults, *args, keyword-only, **kwargs", kw_and_defaults, (torch.randn(3),))


def closures(x):
    k = 2

    def mul(t):
        return t * k

    adders = [lambda t, i=i: t + i for i in range(3)]
    total = 0

    def bump():
        nonlocal total
        total = total + 1

    bump()
    bump()
    return sum(f(mul(x)) for f in adders) + total


expect("nested defs, lambdas, comprehensions, nonlocal writes in the frame", closures, (torch.randn(3),))


def gen(x, n):
    for i in range(n):
        yield x * i


def generators(x):
    return sum(gen(x, 4)), list(gen(x, 2)), [t.sum() for t in gen(x, 3)]


expect("generators consumed by sum/list/for", generators, (torch.randn(3),))


class Thing:
    factor = 4.0

    def __init__(self, w):
        self.w = w

    def apply(self, x):
        return x * self.w + self.offset()

    def offset(self):
        return self.factor

    @staticmethod
    def twice(x):
        return x * 2

    @classmethod
    def make(cls, x):
        return x + cls.factor


def methods(x, thing):
    return thing.apply(x) + Thing.twice(x) + Thing.make(x) + functools.partial(helper, b=5)(x)


expect("bound, static and class methods, functools.partial", methods, (torch.randn(3), Thing(torch.randn(3))))


def partials(x, thing):
    p = functools.partial(helper, b=3, scale=2.0)
    q = functools.partial(p, scale=0.5)  # a keyword given later replaces the bound one
    r = functools.partial(thing.apply)
    kept = callable(q) and isinstance(q, functools.partial)
    return (q(x) + r(x) + p(x, shift=1)) * (1.0 if kept else 0.0)


expect("partials of partials and of bound methods", partials, (torch.randn(3), Thing(torch.randn(3))))


def recursive(x, n):
    return x if n == 0 else recursive(x * 2, n - 1)


def calls_recursive(x):
    return recursive(x, 5)


expect("recursion within the depth limit", calls_recursive, (torch.randn(3),))


def deep(x, n):
    return x if n == 0 else deep(x + 1, n - 1)


def calls_deep(x):
    return deep(x, 60)


tracejit.reset()
got = tracejit.compile(calls_deep, backend=BACKEND)(torch.zeros(2))
check(same(got, calls_deep(torch.zeros(2))), "recursion past the depth limit: matches eager")
ex = tracejit.explain(calls_deep)(torch.zeros(2))
check(any("deeper than" in r.reason for r in ex.break_reasons), "recursion past the depth limit: a break says why")


def inner_print(t):
    y = t + 1
    print("inside")
    return y * 2


def outer(x):
    a = x.sin()
    b = inner_print(a)
    return b.cos()


with contextlib.redirect_stdout(io.StringIO()):
    # outer: a graph before and after the call; inner_print (its own frame): before and after print
    ex = expect("a break inside an inlined call", outer, (torch.randn(3),), graphs=4, breaks=2)
check(any("in inner_print" in r.reason for r in ex.break_reasons), "explain names the inlined function of the inner break")


def side_effects(x, log, cfg):
    global SCALE
    log.append(x.sum())
    cfg["seen"] = cfg.get("seen", 0) + 1
    SCALE = SCALE + 1
    return x * SCALE


log_a, cfg_a = [], {"seen": 0}
want = side_effects(torch.ones(2), log_a, cfg_a)
SCALE = 3.0
log_b, cfg_b = [], {"seen": 0}
tracejit.reset()
got = tracejit.compile(side_effects, backend=BACKEND)(torch.ones(2), log_b, cfg_b)
check(same(got, want) and len(log_b) == 1 and cfg_b == cfg_a and SCALE == 4.0,
      "list/dict/global side effects are replayed after the graph")
ex = tracejit.explain(side_effects)(torch.ones(2), [], {"seen": 0})
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "side effects: one graph, no break")


class Hooked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x).relu()


hooked = Hooked()
hooked.lin.register_forward_hook(lambda mod, inp, out: out * 0 + 1)
x = torch.randn(2, 3)
got = tracejit.compile(hooked, backend=BACKEND)(x)
check(same(got, hooked(x)), "a module with a forward hook: hooks run, result matches eager")
ex = tracejit.explain(hooked)(x)
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "a module with a forward hook: the hook is traced, no break")
hooked.lin.register_full_backward_hook(lambda mod, gi, go: None)
ex = tracejit.explain(hooked)(x)
check(any("backward hooks" in r.reason for r in ex.break_reasons), "a module with backward hooks breaks, and explain says why")

finish()
