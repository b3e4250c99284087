"""Graph breaks (issue "Graph breaks and resume functions"): each program
compares compiled against eager, checks explain's graphs/breaks, and that
fullgraph=True raises tracejit.Unsupported instead of breaking."""
import contextlib
import dis
import io
import math
import random

import torch

import _tracejit
import tracejit
from e2e_util import BACKEND, check, check_equal, check_raises, finish


def same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.allclose(a, b, atol=1e-5, equal_nan=True)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def run_case(name, fn, make_args, graphs, breaks, calls=2, rng=False):
    """Compiled vs eager over `calls` calls, explain counts, fullgraph."""
    tracejit.reset()
    compiled = tracejit.compile(fn, backend=BACKEND)
    for i in range(calls):
        torch.manual_seed(100 + i)
        args = make_args(i)
        if rng:
            torch.manual_seed(i)
            random.seed(i)
        want = fn(*args)
        torch.manual_seed(100 + i)
        args2 = make_args(i)
        if rng:
            torch.manual_seed(i)
            random.seed(i)
        got = compiled(*args2)
        check(same(got, want), f"{name}: call {i} matches eager")
    ex = tracejit.explain(fn)(*make_args(0))
    check_equal((ex.graph_count, ex.graph_break_count), (graphs, breaks), f"{name}: explain graphs/breaks")
    check(all(r.filename.endswith("graph_breaks.py") and r.lineno > 0 for r in ex.break_reasons),
          f"{name}: break reasons carry file:line")
    e = check_raises(tracejit.Unsupported, lambda: tracejit.compile(fn, backend=BACKEND, fullgraph=True)(*make_args(0)),
                     f"{name}: fullgraph=True raises Unsupported")
    if e is not None:
        check("graph_breaks.py:" in str(e), f"{name}: Unsupported names file:line ({e})")
    return ex


# 1. print in the middle: printed once per call, 2 graphs, 1 break.
def print_middle(x):
    y = x.sin() + 1
    print("value", y.shape)
    return y.cos() * 2


buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    tracejit.reset()
    cf = tracejit.compile(print_middle, backend=BACKEND)
    cf(torch.randn(3))
    cf(torch.randn(3))
check_equal(buf.getvalue().count("value torch.Size([3])"), 2, "print: printed once per call")
with contextlib.redirect_stdout(io.StringIO()):
    run_case("print", print_middle, lambda i: (torch.randn(3),), graphs=2, breaks=1)


# 2. data-dependent if: both branches across calls.
def branch(x):
    y = x * 2
    if y.sum() > 0:
        z = y + 1
    else:
        z = y - 1
    return z.relu()


run_case("data-dependent if", branch, lambda i: (torch.ones(4) * (1 if i % 2 == 0 else -1),), graphs=2, breaks=1, calls=4)


# 3. a call of a function using random.random() (not modelled) and of a C function.
def uses_random(x):
    y = x + 1
    s = random.random()
    return y * s + math.floor(2.5)


run_case("random.random()", uses_random, lambda i: (torch.ones(3),), graphs=2, breaks=1, rng=True)


# 4. a break inside a loop body: correct at every iteration.
def loop_break(x, n):
    acc = x
    for i in range(n):
        acc = acc * 1.5 + i
        print("step", i)
    return acc.sum()


with contextlib.redirect_stdout(io.StringIO()):
    ex = run_case("break in a loop", loop_break, lambda i: (torch.ones(3), 4), graphs=5, breaks=4)


# 4b. long loops with a break in the body: resume functions nest per
# iteration up to a bound, then the rest runs in CPython (no RecursionError).
def long_loop(x, n):
    for i in range(n):
        x = x + i
        print(i, end=" ")
    return x


def per_element(t):
    return [round(float(v), 4) for v in t.flatten()]


with contextlib.redirect_stdout(io.StringIO()):
    tracejit.reset()
    got = tracejit.compile(long_loop, backend=BACKEND)(torch.zeros(2), 3000)
check(same(got, torch.full((2,), float(sum(range(3000))))), "a break in a 3000-iteration loop: right result, no recursion error")
t = torch.randn(2500)
check_equal(tracejit.compile(per_element, backend=BACKEND)(t), per_element(t), "a data-dependent break per element of a long tensor")


# 5. a break with a tuple, a list and a module on the stack.
def stack_values(x):
    y = x + 1
    return (torch, [y, 2], (y * 3,), print("on the stack"), y.sum())


with contextlib.redirect_stdout(io.StringIO()):
    run_case("tuple/list/module on the stack", stack_values, lambda i: (torch.randn(2),), graphs=2, breaks=1)


# 6. a break after a list was mutated: the mutation is visible in CPython.
def mutate_then_break(x):
    items = [x]
    items.append(x * 2)
    seen = len(repr(items).split("tensor")) - 1
    return items[1] + seen


run_case("list mutated before the break", mutate_then_break, lambda i: (torch.randn(2),), graphs=2, breaks=1)


# 7. a break in a `with torch.no_grad()` block.
def no_grad_block(x, w):
    y = x @ w
    with torch.no_grad():
        z = y * 2
        print("inside no_grad", z.requires_grad)
        z = z + 1
    return y + z, z.requires_grad


def make_grad_args(i):
    torch.manual_seed(i)
    return torch.randn(2, 3), torch.randn(3, 3, requires_grad=True)


with contextlib.redirect_stdout(io.StringIO()):
    tracejit.reset()
    got = tracejit.compile(no_grad_block, backend=BACKEND)(*make_grad_args(0))
    want = no_grad_block(*make_grad_args(0))
check(same(got, want), "no_grad block: result and requires_grad match eager")
check(torch.is_grad_enabled(), "grad mode restored after the block")
e = check_raises(tracejit.Unsupported, lambda: tracejit.compile(no_grad_block, backend=BACKEND, fullgraph=True)(*make_grad_args(0)),
                 "no_grad block: fullgraph=True raises Unsupported")


# 8. an exception raised by the breaking instruction, caught by the function's own try/except.
def raiser(v):
    raise ValueError(v)


def catches(x):
    y = x + 1
    try:
        z = y * 2
        raiser(3)
        z = z * 100
    except ValueError as err:
        z = y - err.args[0]
    return z.sum()


tracejit.reset()
got = tracejit.compile(catches, backend=BACKEND)(torch.ones(3))
check(same(got, catches(torch.ones(3))), "exception from the breaking call caught by the function's try/except")
check_raises(tracejit.Unsupported, lambda: tracejit.compile(catches, backend=BACKEND, fullgraph=True)(torch.ones(3)),
             "try/except: fullgraph=True raises Unsupported")


# 9. nested breaks: 3+ graphs.
def nested(x):
    a = x + 1
    print("one")
    b = a * 2
    print("two")
    c = b - 3
    print("three")
    return c.exp()


with contextlib.redirect_stdout(io.StringIO()):
    run_case("nested breaks", nested, lambda i: (torch.randn(3),), graphs=4, breaks=3)


# 9b. a frame with cell variables breaks too: the resume function shares its cells.
def with_cells(x, n):
    total = 0

    def bump(v):
        nonlocal total
        total = total + v

    for i in range(n):
        bump(i)
    y = x * total
    print("cells", total)
    scale = lambda t: t * total  # noqa: E731  (reads the shared cell after the break)
    return scale(y) + total


with contextlib.redirect_stdout(io.StringIO()):
    run_case("a frame with cells", with_cells, lambda i: (torch.randn(3), 3), graphs=2, breaks=1)


# 10. the transformed code and resume functions decode with dis and run standalone.
tracejit.reset()
with contextlib.redirect_stdout(io.StringIO()):
    tracejit.compile(nested, backend=BACKEND)(torch.randn(3))
(transformed,) = _tracejit._cache_entries(nested)
dis_text = io.StringIO()
dis.dis(transformed, file=dis_text)
check("CALL_FUNCTION_EX" in dis_text.getvalue(), "transformed code decodes with dis and calls a resume function")
resumes = [c for c in transformed.co_consts if hasattr(c, "co_code") and "__resume_at_" in c.co_qualname]
check_equal(len(resumes), 1, "one resume function for the print break")
resume = resumes[0]
dis.dis(resume, file=io.StringIO())
# Standalone: a resume function is a plain function of (stack..., live locals...).
fn = type(nested)(resume, nested.__globals__)
check_equal(resume.co_varnames[: resume.co_argcount][-1:], ("a",), "the resume function takes the live local 'a'")
with contextlib.redirect_stdout(io.StringIO()):
    stack_args = [None] * (resume.co_argcount - 1)  # print's result on the stack
    out = fn(*stack_args, torch.zeros(3))
check(same(out, torch.exp(torch.zeros(3) * 2 - 3)), "the resume function runs standalone")

# 11. Every transformed code object and resume function of this program
# decodes with dis (recursively through the resume functions' own entries).
def all_codes(code, seen):
    if id(code) in seen:
        return
    seen[id(code)] = code
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            all_codes(const, seen)
    for entry in _tracejit._cache_entries(code):
        all_codes(entry, seen)


tracejit.reset()
with contextlib.redirect_stdout(io.StringIO()):
    for fn, make in [(print_middle, lambda: (torch.randn(3),)), (branch, lambda: (torch.ones(4),)),
                     (branch, lambda: (-torch.ones(4),)), (loop_break, lambda: (torch.ones(3), 3)),
                     (stack_values, lambda: (torch.randn(2),)), (nested, lambda: (torch.randn(3),))]:
        tracejit.compile(fn, backend=BACKEND)(*make())
codes = {}
for fn in (print_middle, branch, loop_break, stack_values, nested):
    for entry in _tracejit._cache_entries(fn):
        all_codes(entry, codes)
resume_count = sum(1 for c in codes.values() if "__resume_at_" in c.co_qualname)
ok = True
for c in codes.values():
    try:
        dis.dis(c, file=io.StringIO())
        list(c.co_lines())
        list(c.co_positions())
    except Exception as e:  # noqa: BLE001
        ok = False
        print("cannot decode", c, e)
check(ok and resume_count >= 5, f"{len(codes)} transformed codes ({resume_count} resume functions) decode with dis")


# 12. Zero-argument super() after a break: CPython's super() reads the
# frame's first local and its __class__ cell, so a resume function takes
# `self` as its first local (resume.cpp). Inlined callers (the constructor
# called from compiled code breaks the caller, then runs as its own frame),
# a method compiled itself, self captured by a closure (a cell), two breaks
# before super(), and an nn.Module subclass.
class SBase:
    def __init__(self, t):
        self.t = t
        self.bias = 1.0

    def scale(self, t):
        return t * 3 + self.bias


class SChild(SBase):
    def __init__(self, t):
        self.n = t.sum().item()  # graph break
        super().__init__(t * 2)

    def scale(self, t):
        k = t.sum().item()  # graph break
        return super().scale(t) + k

    def scale_closure(self, t):
        n = (lambda: self.n)()  # self is a cell of this frame
        k = t.sum().item()  # graph break
        return super().scale(t) + k + n

    def scale_twice(self, t):
        k = t.sum().item()  # graph break
        j = t.max().item()  # graph break
        return super().scale(t) * k + j

    def scale_rebound(self, t):
        k = t.sum().item()  # graph break

        def rebind():  # made after the break: not live there
            nonlocal self
            self = OTHER
        rebind()
        return super().scale(t) + k  # OTHER's bias


class SLinear(torch.nn.Linear):
    def forward(self, x):
        if x.sum().item() > 0:  # graph break
            x = x + 1
        return super().forward(x) * 2


def check_super(name, fn, make_args):
    want = fn(*make_args())
    try:
        got = tracejit.compile(fn, backend=BACKEND)(*make_args())
    except Exception as e:  # noqa: BLE001
        check(False, f"super() {name}: raised {type(e).__name__}: {e}")
        return
    check(same(got, want), f"super() {name}: matches eager")


tracejit.reset()
child = SChild(torch.ones(3))
OTHER = SChild.__new__(SChild)
OTHER.bias = 10.0
check_super("in a constructor called from compiled code", lambda x: SChild(x + 1).t, lambda: (torch.ones(3),))
check_super("in a compiled method", child.scale, lambda: (torch.arange(3.0),))
check_super("with self captured by a closure", child.scale_closure, lambda: (torch.arange(3.0),))
check_super("after two breaks", child.scale_twice, lambda: (torch.arange(3.0),))
check_super("with self rebound by a closure", child.scale_rebound, lambda: (torch.arange(3.0),))
check_super("called from a compiled caller", lambda x: child.scale(x * 2) + 1, lambda: (torch.arange(3.0),))
torch.manual_seed(0)
linear = SLinear(3, 2)
check_super("in an nn.Module subclass's forward", linear, lambda: (torch.arange(3.0),))
check_super("in a module called from a compiled caller", lambda x: linear(x - 1).sum(), lambda: (torch.arange(3.0),))
ex = tracejit.explain(child.scale)(torch.arange(3.0))
check(not any("super" in r.reason for r in ex.break_reasons),
      f"super() after a break is traced ({[r.reason for r in ex.break_reasons]})")

finish()
