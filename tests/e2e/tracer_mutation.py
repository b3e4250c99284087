"""Aliasing and mutation through compiled frames: in-place changes of inputs
(x.add_(1), x[0] = 5, x += 1, x[:, 1] = y) are visible after the call exactly
as in eager, on the first call and on cache hits; a returned view of an
input is a view of it; a returned input is the same object."""
import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish


def fresh():
    return torch.arange(12.0).reshape(3, 4).clone()  # a base tensor, not a view


def add_inplace(x):
    x.add_(1)
    return x.sum()


def setitem_int(x):
    x[0] = 5
    return x * 2


def setitem_slice(x, y):
    x[:, 1] = y
    return x.mean()


def augmented(x):
    x += 1
    x *= 2
    return x


def mutate_then_read(x):
    x.mul_(2)
    return x + 1, x.view(12)


def row_view(x):
    return x[1]


def views(x):
    return x.t(), x.view(2, 6), x[:, ::2], x.unsqueeze(0)


def identity_and_new(x, y):
    return x, y + 1, y


def mutate_view(x):
    v = x[0]
    v.fill_(7)
    return v


def run(fn, nargs=1, what=None):
    """Runs fn eagerly and compiled (twice: trace, then cache hit) on fresh inputs."""
    what = what or fn.__name__
    make = lambda: tuple(fresh() if i == 0 else torch.full((3,), -1.0) for i in range(nargs))  # noqa: E731
    compiled = tracejit.compile(fn, backend=BACKEND)
    eager_args = make()
    eager = fn(*eager_args)
    for attempt in ("first call", "cache hit"):
        args = make()
        got = compiled(*args)
        for i, (a, e) in enumerate(zip(args, eager_args)):
            check(torch.equal(a, e), f"{what} ({attempt}): argument {i} after the call matches eager")
        yield attempt, args, got, eager_args, eager


tracejit.reset()
for fn in (add_inplace, setitem_int, augmented, mutate_then_read, mutate_view):
    for attempt, args, got, eargs, eager in run(fn):
        outs = got if isinstance(got, tuple) else (got,)
        wants = eager if isinstance(eager, tuple) else (eager,)
        check(all(torch.equal(o, w) for o, w in zip(outs, wants)), f"{fn.__name__} ({attempt}): result matches eager")

for attempt, args, got, eargs, eager in run(setitem_slice, 2):
    check(torch.equal(got, eager), f"setitem_slice ({attempt}): result matches eager")

for attempt, args, got, eargs, eager in run(augmented):
    check(got is args[0], f"augmented ({attempt}): x += 1 returns the input object itself, as eager")

for attempt, args, got, eargs, eager in run(mutate_view):
    x = args[0]
    check(got._base is x, f"mutate_view ({attempt}): the returned row is a view of the input")

# A returned view of an input is still a view of it.
for attempt, args, got, eargs, eager in run(row_view):
    x = args[0]
    check(got._base is x, f"row_view ({attempt}): result._base is the input")
    x[1, 2] = 100.0
    check_equal(got[2].item(), 100.0, f"row_view ({attempt}): a later write to the input shows through the view")
    got.zero_()
    check_equal(x[1].abs().sum().item(), 0.0, f"row_view ({attempt}): a write through the view reaches the input")

for attempt, args, got, eargs, eager in run(views):
    x = args[0]
    check(all(v._base is x for v in got), f"views ({attempt}): t/view/slice/unsqueeze results are views of the input")
    check(all(torch.equal(g, e) for g, e in zip(got, eager)), f"views ({attempt}): values match eager")

# A returned input is the same object.
tracejit.reset()
compiled = tracejit.compile(identity_and_new, backend=BACKEND)
for attempt in ("first call", "cache hit"):
    x, y = fresh(), torch.ones(3)
    a, b, c = compiled(x, y)
    check(a is x and c is y, f"identity_and_new ({attempt}): returned inputs are the same objects")
    check(b is not y and torch.equal(b, y + 1), f"identity_and_new ({attempt}): the new tensor is new")
check_equal(tracejit.counters()["cache_hits"], 1, "identity_and_new: the second call hit the cache")

# Mutation of an input that requires grad goes through autograd like eager.
def scale_leaf_copy(w):
    v = w * 1.0
    v.mul_(3)
    return v.sum()


we, wc = torch.ones(4, requires_grad=True), torch.ones(4, requires_grad=True)
scale_leaf_copy(we).backward()
tracejit.compile(scale_leaf_copy, backend=BACKEND)(wc).backward()
check(torch.equal(we.grad, wc.grad), "in-place on an intermediate: gradient matches eager")

# An in-place op on an input that requires grad: eager refuses it on a leaf
# (or a view of one) and allows it on a computed tensor. The trace of a
# computed tensor keeps the op and relies on it (guard NOT_GRAD_LEAF): a
# later leaf recompiles, breaks the graph there and raises eager's error.
def add_one_then_double(x):
    x.add_(1)
    return x * 2


def leaf_error(fn, *args):
    try:
        fn(*args)
    except RuntimeError as e:
        return "leaf Variable that requires grad" in str(e)
    return False


tracejit.reset()
compiled = tracejit.compile(add_one_then_double, backend=BACKEND)
a = torch.ones(3, requires_grad=True)
compiled(a * 1.0).sum().backward()
check(torch.equal(a.grad, torch.full((3,), 2.0)), "in-place on a computed input: traced, gradient as eager's")
check_equal(tracejit.counters()["graph_breaks"], 0, "in-place on a computed input: no graph break")
leaf = torch.ones(3, requires_grad=True)
check(leaf_error(compiled, leaf) and leaf_error(add_one_then_double, leaf),
      "in-place on a leaf requiring grad: eager's error, compiled as in eager")
check_equal((tracejit.counters()["frames_traced"], tracejit.counters()["graph_breaks"]), (2, 1),
            "in-place on a leaf: the guard failed, the retrace broke the graph before the op")


# Ops autograd lets through on a leaf (logical_not_) stay in the graph;
# the refused one inside `try` is eager's to raise, and the `except` sees it.
def not_then_try_add(x):
    x.logical_not_()
    try:
        x.add_(1)
    except RuntimeError:
        pass
    return x + 1


tracejit.reset()
xe, xc = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
want = not_then_try_add(xe)
got = tracejit.compile(not_then_try_add, backend=BACKEND)(xc)
check(torch.equal(got, want) and torch.equal(xc, xe), "logical_not_ then a refused add_ in try: as eager")
check(tracejit.counters()["graph_breaks"] >= 1, "logical_not_ then a refused add_ in try: a graph break before add_")


# A view the graph made by unbind (several view outputs), or in no-grad
# mode, of a tensor that requires grad: eager refuses an in-place op on it,
# and the `except` around it must see that error, not the graph's.
def write_view(x, how):
    y = x * 2
    if how == "unbind":
        v = y.unbind(1)[0]
    elif how == "split":
        v = y.split(1)[1]
    else:
        with torch.no_grad():
            v = y[0]
    try:
        v.add_(1)
        caught = False
    except RuntimeError:
        caught = True
    return y + 1, caught


for how in ["unbind", "split", "no_grad"]:
    tracejit.reset()
    x = torch.ones(3, 2, requires_grad=True)
    want = write_view(x, how)
    got = tracejit.compile(write_view, backend=BACKEND)(x, how)
    check(want[1] and got[1] is True and torch.equal(got[0], want[0]),
          f"in-place on a {how} view of a tensor requiring grad: eager's error caught, results as eager's")
    check(tracejit.counters()["graph_breaks"] >= 1, f"in-place on a {how} view: a graph break before the op")
# Without grad anywhere autograd lets it through, and it stays in the graph.
tracejit.reset()
got = tracejit.compile(write_view, backend=BACKEND)(torch.ones(3, 2), "unbind")
check(torch.equal(got[0], write_view(torch.ones(3, 2), "unbind")[0]) and got[1] is False,
      "in-place on an unbind view without grad: as eager")
check_equal(tracejit.counters()["graph_breaks"], 0, "in-place on an unbind view without grad: no graph break")


# A view returned by the graph keeps what autograd knows of how it was made:
# the caller's in-place op on an unbind view (of an intermediate or of an
# input) or on a view made in no-grad mode is refused as on eager's.
def views_out(x):
    y = x * 2
    with torch.no_grad():
        n = y[1]
    return y.unbind(0)[0], x.unbind(1)[1], n, n.requires_grad


def refused(t):
    try:
        t.add_(1)
    except RuntimeError as e:
        return "is being modified inplace" in str(e)
    return False


tracejit.reset()
xe = torch.ones(3, 2, requires_grad=True) * 1.0
xc = torch.ones(3, 2, requires_grad=True) * 1.0
want = views_out(xe)
got = tracejit.compile(views_out, backend=BACKEND)(xc)
check_equal([refused(t) for t in got[:3]], [refused(t) for t in want[:3]],
            "returned unbind and no-grad views: the caller's in-place op refused as on eager's")
check_equal(got[3], want[3], "a view made in no-grad mode of a tensor requiring grad requires grad, as eager's")
check_equal(tracejit.counters()["graph_breaks"], 0, "returned unbind and no-grad views: no graph break")


# In-place ops in no-grad mode keep the flag of the tensor they write.
def inplace_no_grad(x):
    y = x * 2
    with torch.no_grad():
        y.add_(1)
        y.t_()
        x.mul_(2)
    return y.requires_grad, (y * 2).requires_grad, x.requires_grad


tracejit.reset()
want = inplace_no_grad(torch.ones(3, 2, requires_grad=True) * 1.0)
got = tracejit.compile(inplace_no_grad, backend=BACKEND)(torch.ones(3, 2, requires_grad=True) * 1.0)
check_equal(got, want, "requires_grad after in-place ops in no-grad mode: as eager's")


# Calls that change nothing return the tensor itself in eager, in each of
# these spellings too (round 12 of the fuzzer: each made a new tensor).
def returns_self(x, v):
    a = x.contiguous(memory_format=torch.contiguous_format)
    b = x.to(dtype=x.dtype, copy=False)
    c = v.flatten()
    x.unsqueeze_(0)  # a later metadata change reaches every alias
    return a is x, b is x, c is v, tuple(a.shape)


make = lambda: (torch.ones(2, 3), torch.ones(4))
want = returns_self(*make())
got = tracejit.compile(returns_self, backend=BACKEND)(*make())
check_equal(got, want, "contiguous(memory_format=contiguous_format), to(dtype=same), 1-d flatten(): the tensor itself")


# A write of values that require grad through a view of a tensor that does
# not (`x[0] = w`): in eager the tensor and every differentiable view of it,
# made before the write or after, require grad from then on; detached
# aliases do not (round 17's fuzz seeds 9979195, 9979603: the trace read the
# stale flag of x's placeholder). Read in the graph, and across a break.
def write_grad_through_view(x, w):
    before = x[1]                  # a view made before the write
    alias = x.detach()             # outside autograd: stays False
    with torch.no_grad():
        quiet = x[:, :2]           # a view made in no-grad mode: True as well
    x[0] = w
    after = x.t()                  # a view made after it
    flags = (x.requires_grad, before.requires_grad, alias.requires_grad, quiet.requires_grad,
             after.requires_grad, (x * 2).requires_grad, (before + 1).requires_grad,
             before.grad_fn is None, x.argmax().requires_grad)
    return flags, x * 3


def write_grad_then_break(x, w):
    x[0, 1:] = w[1:]
    a = x.requires_grad
    print("break", end="\r")      # a graph break: the rest is another frame
    return a, x.requires_grad, x.grad_fn is None, x.sum()


def write_grad_through_view_nograd_write(x, w):
    with torch.no_grad():
        x[0] = w                   # no history in no-grad mode
    return x.requires_grad, x[1].requires_grad


def flags_and_grad(fn):
    make = lambda: (torch.arange(8.0).reshape(2, 4), torch.linspace(-1, 1, 4, requires_grad=True))
    x, w = make()
    want = fn(x, w)
    want[-1].sum().backward() if want[-1].requires_grad else None
    want_grad = w.grad
    tracejit.reset()
    x, w = make()
    got = tracejit.compile(fn, backend=BACKEND)(x, w)
    got[-1].sum().backward() if got[-1].requires_grad else None
    check_equal(got[:-1], want[:-1], f"{fn.__name__}: requires_grad flags as eager's")
    check(torch.equal(got[-1], want[-1]), f"{fn.__name__}: value as eager's")
    check((got_grad := w.grad) is None and want_grad is None or torch.equal(got_grad, want_grad),
          f"{fn.__name__}: the gradient of the written values as eager's")


flags_and_grad(write_grad_through_view)
flags_and_grad(write_grad_then_break)


x, w = torch.zeros(2, 4), torch.ones(4, requires_grad=True)
want = write_grad_through_view_nograd_write(x, w)
tracejit.reset()
x, w = torch.zeros(2, 4), torch.ones(4, requires_grad=True)
got = tracejit.compile(write_grad_through_view_nograd_write, backend=BACKEND)(x, w)
check_equal(got, want, "a write of values requiring grad in no-grad mode: nothing requires grad, as eager")

finish()
