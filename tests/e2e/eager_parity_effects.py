"""A compiled function fails, makes side effects and runs special in-place
ops exactly as eager does (docs/reliability.md, the fuzzer's defects):
each case runs eagerly and compiled with BACKEND (first and cached call)
on fresh inputs and compares the result, the exception (type and message),
the inputs afterwards (values, shapes, strides, requires_grad, storage),
what was printed and what was appended to LOG."""
import contextlib
import io

import torch

import tracejit
from e2e_util import BACKEND, check_equal, finish

LOG = []


def describe(v):
    if isinstance(v, torch.Tensor):
        return ("tensor", v.dtype, tuple(v.shape), v.stride() if v.dim() else (), v.requires_grad,
                v.detach().tolist())
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, [describe(x) for x in v])
    return v


def outcome(fn, args):
    LOG.clear()
    buf = io.StringIO()
    result, exc = None, None
    with contextlib.redirect_stdout(buf):
        try:
            result = fn(*args)
        except Exception as e:  # noqa: BLE001
            exc = (type(e).__name__, str(e).split("\n")[0])
    return {"result": describe(result), "exception": exc, "inputs": describe(list(args)), "printed": buf.getvalue(),
            "log": list(LOG)}


def same_as_eager(fn, make_args, what):
    want = outcome(fn, make_args())
    compiled = tracejit.compile(fn, backend=BACKEND)
    for call in ("first call", "cached call"):
        got = outcome(compiled, make_args())
        for key in want:
            check_equal(got[key], want[key], f"{what} ({call}): {key}")
    return want


# 1. An op whose result is unused still runs, and fails where eager fails
# (AOT's functional graph used to drop it as dead code).
def unused_division_caught(x):
    try:
        v = x // 0
    except RuntimeError as e:
        print("caught", e)
    return x + 1


def unused_remainder(x):
    LOG.append("before")
    torch.fmod(x, torch.zeros_like(x))
    return x * 2


def unused_failure_after_input_write(x):
    b = x == x
    LOG.append(tuple(b.shape))
    x.zero_()
    torch.log_softmax(b, -1)  # not implemented for bool: only the CPU kernel says so
    return x


def unused_inplace_failure_caught(x):
    b = torch.cat([x > 0, x > 1])
    try:
        b.relu_()  # not supported for bool; b is never read again
    except RuntimeError as e:
        LOG.append(str(e))
    return x * 2


def overwritten_division(x, y):
    try:
        v = x // 0
        v[...] = y
    except RuntimeError as e:
        print("caught", e)
        v = y * 2
    return v


ints = lambda: (torch.arange(-2, 4),)  # noqa: E731
w = same_as_eager(overwritten_division, lambda: (torch.arange(3), torch.ones(3, dtype=torch.int64)),
                  "a division by zero overwritten whole (v[...] = y) in a try")
check_equal(w["printed"], "caught ZeroDivisionError\n", "eager catches the overwritten division")
w = same_as_eager(unused_inplace_failure_caught, ints, "an in-place op failing on an intermediate read no more, in a try")
check_equal(len(w["log"]), 1, "eager catches relu_ of a bool tensor")
w = same_as_eager(unused_division_caught, ints, "an unused integer division by zero in a try")
check_equal(w["printed"], "caught ZeroDivisionError\n", "eager catches the division by zero")
w = same_as_eager(unused_remainder, ints, "an unused fmod by zero")
check_equal(w["exception"], ("RuntimeError", "ZeroDivisionError"), "eager raises for the unused fmod")
w = same_as_eager(unused_failure_after_input_write, lambda: (torch.arange(6, dtype=torch.float64).view(3, 2),),
                  "an input written, then an unused op failing")
check_equal(w["log"], [(3, 2)], "eager's side effect before the failing op")

# 2. A graph that writes inputs and then fails inside the user's try: the
# writes before the failing op are undone and the frame reruns as eager's
# bytecode, so the except clause runs and the inputs are written once,
# even when an input that requires grad is among those the graph writes
# (it fails before writing it) or the graph changes an input's metadata.
def helper_mm(a, b):
    try:
        return a @ b
    except RuntimeError:
        pass


def write_then_grad_leaf_in_try(x0, x1, x2):
    v1 = helper_mm(x1, x0)  # float32 @ float64: only the kernel checks dtypes
    x1 *= 2
    try:
        x2.add_(1)  # a leaf that requires grad: eager raises
    except RuntimeError as e:
        print("caught", e)
    return (v1, x2 * 2)


def metadata_write_then_fail_in_try(x, idx):
    x.unsqueeze_(0)
    x.mul_(3)
    LOG.append(tuple(x.shape))
    try:
        y = torch.gather(x, 1, idx)  # index out of range: only the kernel sees it
    except RuntimeError:
        LOG.append("caught")
        y = x + 1
    return y


def aliased_write_then_fail_in_try(x, y, idx):
    x.add_(1)
    try:
        z = torch.gather(y, 0, idx)
    except RuntimeError:
        LOG.append("caught")
        z = y * 2
    return z


def grad_leaf_args():
    g = torch.Generator().manual_seed(0)
    return (torch.randn(2, 2, generator=g, dtype=torch.float64), torch.randn(4, generator=g)[::2],
            torch.randn(3, generator=g).requires_grad_())


same_as_eager(write_then_grad_leaf_in_try, grad_leaf_args,
              "an input written, a failing op in a callee's try, an in-place op on a leaf that requires grad in a try")
w = same_as_eager(metadata_write_then_fail_in_try, lambda: (torch.ones(3), torch.tensor([[0, 7]])),
                  "unsqueeze_ and mul_ on an input, then a failing gather in a try")
check_equal(w["log"], [(1, 3), "caught"], "eager's side effects: the shape after unsqueeze_, the except clause")
for how, make in (("distinct", lambda: (torch.ones(3), torch.ones(3), torch.tensor([5]))),
                  ("the same tensor", lambda: (lambda t: (t, t, torch.tensor([5])))(torch.ones(3)))):
    same_as_eager(aliased_write_then_fail_in_try, make, f"an input written, then a failing op on {how} in a try")
# Compiled for distinct inputs, then called with the same tensor twice.
compiled_aliased = tracejit.compile(aliased_write_then_fail_in_try, backend=BACKEND)
outcome(compiled_aliased, (torch.ones(3), torch.ones(3), torch.tensor([5])))
t = torch.ones(3)
want = outcome(aliased_write_then_fail_in_try, (t, t, torch.tensor([5])))
t = torch.ones(3)
check_equal(outcome(compiled_aliased, (t, t, torch.tensor([5]))), want,
            "compiled for distinct inputs, called with one tensor twice: written once, the except clause runs")

# 3. Factories keep eager's dtype from their fill value through AOT
# (LibTorch 1.13's meta `full` says float32): llvm allocates from metas.
def full_of_bool_and_int(x):
    return x + torch.full((2,), True), torch.full((2,), 3) * x, torch.full((2,), 1.5) + x


same_as_eager(full_of_bool_and_int, lambda: (torch.tensor(3),), "torch.full of a bool, an int, a float")

# 4. Outputs that are distinct tensors in eager are distinct compiled: a
# functional copy_ of an equal-shaped tensor is its source, so AOT's graph
# returned one value for two outputs (fuzz seed 20113).
def copy_into_then_return_both(x):
    a = torch.addcmul(x, x, x, value=0.5)
    b = a - x
    a.copy_(b)
    return b, a


for call, fn in (("eager", copy_into_then_return_both),
                 ("compiled", tracejit.compile(copy_into_then_return_both, backend=BACKEND))):
    for n in ("first call", "cached call"):
        b, a = fn(torch.tensor([1, 2, 3]))
        before = b.tolist()
        a.add_(10)
        check_equal((a is b, b.tolist()), (False, before),
                    f"{call}: a.copy_(b) and both returned: two tensors, writing one leaves the other ({n})")

# 5. In-place ops a functional graph cannot represent run as captured (a
# counted fallback under AOT): requires_grad_ on an input and on a result,
# set_ on a sliced input, detach_ of a detached input; and an input's
# detach() comes back as eager's (no view, no grad).
def requires_grad_inside(x0, x1):
    x0.requires_grad_()
    v = x1.amax(-1)
    v.requires_grad_()
    return v, (x0 * 2).sum()


def requires_grad_then_read(x):
    x.requires_grad_()
    print("requires grad:", x.requires_grad)
    y = x * 2
    LOG.append(y.requires_grad)
    return y


def set_onto_clone(x):
    c = x.clone() + 1
    y = x.set_(c)
    return y, y * 2


def detach_in_place(x):
    d = x.detach()
    e = d.detach_()
    return e * 2, e


def unsqueeze_then_detach_(x):
    v = torch.isnan(x)
    v.unsqueeze_(0)
    v.detach_()  # breaks the graph: v is a graph output here
    return v, x + 1


def overwrite_fresh_from_input(x0, x1):
    v = x1 >= x0
    v[...] = x0
    return v


def detach_of_input(x):
    return x.detach(), x * 2


fallbacks = tracejit.counters()["backend_fallbacks"]
w = same_as_eager(requires_grad_inside, lambda: (torch.ones(2, 3), torch.arange(3.0)), "requires_grad_ on an input and a result")
check_equal(w["inputs"][1][0][4], True, "eager: the input requires grad afterwards")
w = same_as_eager(requires_grad_then_read, lambda: (torch.ones(2),), "requires_grad_, then .requires_grad read")
check_equal((w["printed"], w["log"]), ("requires grad: True\n", [True]), "eager reads the new flag")
same_as_eager(set_onto_clone, lambda: (torch.arange(4.0).view(2, 2)[1:],), "set_ of a sliced input onto a new tensor")
same_as_eager(detach_in_place, lambda: (torch.arange(3.0, requires_grad=True),), "detach_ of a detached input")
same_as_eager(unsqueeze_then_detach_, lambda: (torch.ones(1, 1),), "unsqueeze_ of an intermediate, then detach_")
bools = lambda: (torch.tensor([[True, False, True]]), torch.tensor([[False, False, True]]))  # noqa: E731
same_as_eager(overwrite_fresh_from_input, bools, "a fresh tensor overwritten from an input (v[...] = x)")
x0, x1 = bools()
r = tracejit.compile(overwrite_fresh_from_input, backend=BACKEND)(x0, x1)
check_equal((r is x0, r.data_ptr() == x0.data_ptr()), (False, False), "v[...] = x: the result is not the input")
w = same_as_eager(detach_of_input, lambda: (torch.arange(3.0, requires_grad=True),), "an input's detach() returned")
check_equal(w["result"][1][0][4], False, "eager: an input's detach() does not require grad")
t = torch.ones(2, requires_grad=True)
d = tracejit.compile(detach_of_input, backend=BACKEND)(t)[0]
check_equal((d._is_view(), d.requires_grad, d.data_ptr() == t.data_ptr()), (False, False, True),
            "compiled: an input's detach() shares its memory, is no view, does not require grad")
if BACKEND != "eager":
    check_equal(tracejit.counters()["backend_fallbacks"] - fallbacks, 3,
                "the three graphs with requires_grad_ or set_ fall back to running as captured, counted once each")

# 6. Memory of its own: an intermediate overwritten (copy_) from a view of
# another returned tensor, and views of it, do not share that tensor's
# memory; an input written with a value that requires grad gets eager's
# autograd history.
def copy_from_view_of_output(x):
    a = x + 0
    r = a.reshape(-1)
    b = torch.addcmul(a, a, r, value=0.5)
    b.copy_(r)
    return a, b, b.unbind(-1)[0]


def written_with_grad_value(x, v):
    y = x * 2
    str(y.sum().item())  # a graph break: v is an input of the next graph
    v[...] = y
    return v


for call, fn in (("eager", copy_from_view_of_output),
                 ("compiled", tracejit.compile(copy_from_view_of_output, backend=BACKEND))):
    a, b, c = fn(torch.tensor([1.0, 2.0]))
    check_equal((a.data_ptr() == b.data_ptr(), b.storage().data_ptr() == c.storage().data_ptr()),
                (False, True), f"{call}: b.copy_(view of a): b has memory of its own, its view shares b's")
same_as_eager(written_with_grad_value, lambda: (torch.ones(2, requires_grad=True), torch.zeros(2)),
              "an input written with a value that requires grad")

finish()
