"""Exceptions through compiled code behave as in eager (issue 18, items 5, 6,
17 and 21): an op failing inside a graph raises eager's own exception (type
and message, no prefix); Python side effects before it are kept, once; the
user's try/except catches it; nothing runs twice (input mutations, random
numbers); and tracebacks read like python3.11's: the user's function names
and lines, one entry per call, however many graph breaks a function has."""
import traceback
import warnings

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish


def outcome(fn, *args):
    """(result or None, exception type name, message, [(function, line)...])."""
    try:
        return fn(*args), None, None, []
    except Exception as e:  # noqa: BLE001
        frames = [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)][1:]
        return None, type(e).__name__, str(e), frames


def same_outcome(fn, make_args, what, compare_frames=True):
    eager = outcome(fn, *make_args())
    compiled_fn = tracejit.compile(fn, backend=BACKEND)
    for call in ("first call", "cached call"):
        got = outcome(compiled_fn, *make_args())
        check_equal(got[1:3], eager[1:3], f"{what} ({call}): exception type and message")
        if compare_frames:
            check_equal(got[3], eager[3], f"{what} ({call}): traceback (function, line) entries")
    return eager


# 1. Eager's own exception type and message.
def tril_1d(x):
    y = x * 2
    return torch.tril(y)  # IndexError


def invert_float(x):
    return ~(x + 1)  # TypeError, raised by Tensor.__invert__ itself


def mm_shapes(x):
    return (x + 1) @ torch.ones(3)  # RuntimeError


e = same_outcome(tril_1d, lambda: (torch.ones(2),), "tril of a 1-d tensor")
check_equal(e[1], "IndexError", "eager raises IndexError for tril of a 1-d tensor")
same_outcome(invert_float, lambda: (torch.ones(2),), "~ of a float tensor")
same_outcome(mm_shapes, lambda: (torch.ones(2),), "matmul of mismatched shapes")


# 2. A graph that writes an input before failing cannot be rerun: the
# exception is still eager's (translated from ATen's c10::IndexError), and
# the input is written once, as in eager.
def mutate_then_fail(x, v):
    x.add_(1)
    return torch.tril(v)


xs = {}
for name in ("eager", "compiled"):
    fn = mutate_then_fail if name == "eager" else tracejit.compile(mutate_then_fail, backend=BACKEND)
    x = torch.zeros(2)
    r = outcome(fn, x, torch.ones(3))
    xs[name] = (x.tolist(), r[1], r[2], r[3])
check_equal(xs["compiled"][:3], xs["eager"][:3], "a graph writing its input, then failing: input written once, eager's error")
check_equal(xs["compiled"][3], xs["eager"][3], "its traceback: the user's function at the failing op's line")
# The same with the failing op's input aliasing the written one (the same
# tensor, a view of it): still written once (AOT's wrapper may run such a
# call op by op, so the frame is not rerun then).
compiled_mutate = tracejit.compile(mutate_then_fail, backend=BACKEND)
for how, other in (("distinct", lambda a: torch.ones(3)), ("the same tensor", lambda a: a), ("a view", lambda a: a[:2])):
    got = []
    for fn in (mutate_then_fail, compiled_mutate):
        x = torch.zeros(3)
        r = outcome(fn, x, other(x))
        got.append((x.tolist(), r[1], r[2]))
    check_equal(got[1], got[0], f"a graph writing its input, the failing op reading {how}: written once, eager's error")


# 3. Side effects before the failing op happen once; nothing runs twice.
LOG = []


class Box:
    n = 0


box = Box()


def effects_then_fail(x, y):
    LOG.append("before")
    box.n += 1
    z = x.sin()
    return z @ y


for call in ("first call", "cached call"):
    LOG.clear()
    box.n = 0
    r = outcome(tracejit.compile(effects_then_fail, backend=BACKEND), torch.ones(2), torch.ones(3))
    check_equal((r[1], LOG, box.n), ("RuntimeError", ["before"], 1), f"side effects before a failing op, once ({call})")


# Random numbers before the failing op are drawn once (no rerun of a graph
# that drew them): the generator ends where eager's does.
def random_then_fail(x):
    noise = torch.rand(2)
    return torch.tril(x + noise)


states = {}
for name in ("eager", "compiled"):
    fn = random_then_fail if name == "eager" else tracejit.compile(random_then_fail, backend=BACKEND)
    torch.manual_seed(0)
    r = outcome(fn, torch.ones(2))
    states[name] = (r[1], r[2], torch.rand(1).item())
check_equal(states["compiled"], states["eager"], "random numbers before a failing op are drawn once, eager's error")


# A graph that drew CPU random numbers and then failed is rerun with the
# generator put back: the user's except clause runs, the numbers are eager's.
def random_caught(x):
    try:
        y = torch.tril(x + torch.rand(2))
    except IndexError:
        y = x + torch.rand(2)
    return y


values = {}
for name in ("eager", "compiled"):
    fn = random_caught if name == "eager" else tracejit.compile(random_caught, backend=BACKEND)
    torch.manual_seed(1)
    values[name] = (fn(torch.ones(2)).tolist(), torch.rand(1).item())
check_equal(values["compiled"], values["eager"], "random numbers, then a caught failure: eager's values and generator")


# 4. The user's own try/except catches an op failing inside a graph.
def caught(a):
    try:
        y = a @ a.t()  # matmul is not implemented for bool
    except RuntimeError:
        y = a.sum()
    return y


def caught_type(x):
    try:
        return torch.tril(x * 3)
    except IndexError as err:
        return "caught " + type(err).__name__


a = torch.ones(2, 3, dtype=torch.bool)
check_equal(tracejit.compile(caught, backend=BACKEND)(a).item(), caught(a).item(), "try/except around a failing op")
check_equal(tracejit.compile(caught_type, backend=BACKEND)(torch.ones(2)), "caught IndexError",
            "except IndexError catches what eager raises")


# 4b. The eager backend, one frame: an input written in place, Python side
# effects, then an op that fails only at run time (an index out of range in
# a gather), inside and outside the frame's own try/except:
# the write happens once, the side effects are kept, the except clause runs.
class Effects:
    n = 0


def write_effects_then_fail(x, m, box, log, catch):
    if catch:
        try:
            x.add_(1)
            box.n += 1
            log.append("before")
            z = torch.gather(x, 0, m)
        except RuntimeError:
            log.append("caught")
            z = x * 2
        return z
    x.add_(1)
    box.n += 1
    log.append("before")
    return torch.gather(x, 0, m)


for catch in (True, False):
    compiled_wef = tracejit.compile(write_effects_then_fail, backend=BACKEND)
    for call in ("first call", "cached call"):
        seen = []
        for fn in (write_effects_then_fail, compiled_wef):
            x, box, log = torch.ones(2), Effects(), []
            r = outcome(fn, x, torch.tensor([0, 5]), box, log, catch)
            result = r[0].tolist() if r[0] is not None else None
            seen.append((result, r[1], x.tolist(), box.n, log))
        check_equal(seen[1], seen[0], f"write, side effects, failing op (try/except: {catch}), {call}: as eager")


# 5. A failing op after a graph break (inside a resume function): the print
# before the break runs once, the exception is eager's.
PRINTED = []


def break_then_fail(x):
    y = x * 2
    PRINTED.append(str(y.sum().item()))  # .item() breaks the graph
    return torch.tril(y + 1)


same_outcome(break_then_fail, lambda: (torch.ones(2),), "a failing op after a graph break")
check_equal(len(PRINTED), 3, "the code before the break ran once per call (eager + two compiled calls)")


# 6. Warnings ATen emits inside a graph are Python warnings, as in eager:
# filters see them, and an "error" filter raises eager's exception.
def warns(x, m):
    return x.masked_fill(m, 0.0) + 1  # a uint8 mask is deprecated: TORCH_WARN


def warn_outcome(fn, action):
    with warnings.catch_warnings(record=True) as caught_warnings:
        warnings.simplefilter(action)
        r = outcome(fn, torch.ones(3), torch.tensor([1, 0, 1], dtype=torch.uint8))
    return [(type(w.message).__name__, str(w.message)) for w in caught_warnings], r[1:3]


eager_warn = warn_outcome(warns, "always")
check(len(eager_warn[0]) == 1, "eager warns once for a uint8 mask")
compiled_warns = tracejit.compile(warns, backend=BACKEND)
for call in ("first call", "cached call"):
    check_equal(warn_outcome(compiled_warns, "always"), eager_warn, f"an op's warning is a Python warning ({call})")
    check_equal(warn_outcome(compiled_warns, "error"), warn_outcome(warns, "error"),
                f"an op's warning under an 'error' filter raises eager's exception ({call})")


# 7. Tracebacks: one entry per call of the user's function, at the user's
# lines, with breaks in a loop (one resume function per iteration), several
# breaks in a row, and calls between compiled functions.
def loop_breaks(x):
    for i in range(30):
        x = x + 1
        str(x.sum().item())  # a break on every iteration
        if i == 27:
            raise ValueError("boom at 27")
    return x


def breaks_in_a_row(x):
    x = x + 1
    a = x.sum().item()
    x = x * a
    b = x.sum().item()
    x = x - b
    raise KeyError(str(x.shape))


def inner(x):
    y = x.cos()
    y.sum().item()
    return torch.tril(y)


def outer(x):
    z = x + 1
    z.sum().item()
    return inner(z) * 2


same_outcome(loop_breaks, lambda: (torch.ones(2),), "an exception after 27 breaks in a loop")
same_outcome(breaks_in_a_row, lambda: (torch.ones(2),), "an exception after two breaks in a row")
e = same_outcome(outer, lambda: (torch.ones(2),), "an op failing in a compiled callee of a compiled caller")
check_equal([name for name, _ in e[3]], ["outer", "inner"], "eager's traceback names outer, then inner")

finish()
