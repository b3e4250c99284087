"""Issue 42: numbers read with Tensor.item()/.tolist() under
capture_scalar_outputs behave exactly as the Python scalars they are in
eager. Passed to a tensor op, such a number takes part in type promotion
as a wrapped Python scalar (an int tensor with a float number is float32,
never float64); Python int arithmetic never wraps in int64 (Python's ints
grow: a result that may leave int64's range breaks the graph); float `%`
has Python's sign of zero; an op eager raises at raises the same
(Half clamp with a number, a float32 conversion that overflows). Each case
compares dtype, shape and every value bit for bit (the sign of a zero, nan)
or the exception with eager, for several read values, and where the number
is traced, that the function is one graph (the session-24 review's
programs, /tmp/s24/rev/cap_*.py). Every case runs in both modes: with
capture_scalar_outputs=True, and with the default config (False), where
such numbers are traced speculatively (a frame that then traces whole keeps
them in the graph, with the same semantics; a use that breaks makes the
frame trace again breaking at the read)."""
import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

T = torch.tensor
xi = T([1, 2, 3])
xf = T([1.0, 2.0, 3.0])
xh = T([-1.0, 0.5, 3.0], dtype=torch.float16)
c = T([True, False, True])


def exact(v):
    """A comparable form: dtype, shape and values' reprs (-0.0, nan, ints)."""
    if isinstance(v, torch.Tensor):
        return ("tensor", v.dtype, tuple(v.shape), repr(v.tolist()))
    if isinstance(v, (tuple, list)):
        return (type(v).__name__, tuple(exact(x) for x in v))
    return (type(v).__name__, repr(v))


def run(fn, arg):
    try:
        return ("ok", exact(fn(arg.clone())))
    except Exception as e:  # eager's exception type is the behaviour checked
        return ("raises", type(e).__name__)


FLOATS = (T(2.5), T(-1.5), T(0.0))
CASES = [
    # name, function, inputs, traced: True one graph with 0 breaks, False a
    # break at the number's use, None: eager raises for each input
    ("torch.add(int tensor, float)", lambda t: torch.add(xi, t.item()), FLOATS, True),
    ("int tensor .add(float)", lambda t: xi.add(t.item()), FLOATS, True),
    ("torch.mul(int tensor, float)", lambda t: torch.mul(xi, t.item()), FLOATS, True),
    ("torch.sub(int tensor, float)", lambda t: torch.sub(xi, t.item()), FLOATS, True),
    ("torch.div(int tensor, float)", lambda t: torch.div(xi, t.item() + 3.0), FLOATS, True),
    ("int tensor * float, bool tensor + float", lambda t: (xi * t.item(), c + t.item()), FLOATS, True),
    ("float - int tensor, float / int tensor", lambda t: (t.item() - xi, (t.item() + 3.0) / xi), FLOATS, True),
    ("int tensor // float, float32 % float", lambda t: (xi // (t.item() + 3.0), xf % (t.item() + 3.0)), FLOATS, True),
    ("int tensor == float, float32 >= float", lambda t: (xi == t.item(), xf >= t.item(), xi.eq(t.item())), FLOATS, True),
    ("torch.where(c, float, 0.5)", lambda t: torch.where(c, t.item(), 0.5), FLOATS, False),
    ("torch.where(c, int tensor, float)", lambda t: torch.where(c, xi, t.item()), FLOATS, False),
    ("torch.clamp(int tensor, max=float)", lambda t: torch.clamp(xi, max=t.item()), FLOATS, False),
    ("int tensor .pow(float)", lambda t: xi.pow(t.item()), FLOATS, False),
    # an int or bool tensor to an int item's power: eager raises for a
    # negative exponent (the session-26 review's cap_int_pow_negative.py)
    ("int tensor ** int", lambda t: xi ** t.item(), (T(-1), T(-2), T(0), T(2)), False),
    ("bool tensor ** int", lambda t: c ** t.item(), (T(-1), T(3)), False),
    ("int 0-d sum ** int", lambda t: xi.sum() ** t.item(), (T(-3), T(2)), False),
    ("float32 ** float, float ** float32", lambda t: (xf ** (t.item() + 1.0), (t.item() + 3.0) ** xf), FLOATS, False),
    ("masked_fill of float32 with a float", lambda t: xf.masked_fill(c, t.item()), FLOATS, False),
    ("full_like of an int tensor with a float", lambda t: torch.full_like(xi, t.item()), FLOATS, False),
    ("Half clamp(max=float) raises", lambda t: xh.clamp(max=t.item()), FLOATS, None),
    ("float32 where with a float beyond float32 raises", lambda t: torch.where(c, xf, t.item() * 1e300), FLOATS, False),
    ("int item times a float64 tensor", lambda t: T([1.5, 2.5], dtype=torch.float64) * t.item(), (T(3), T(-7)), True),
    ("int items: + - * with a small int tensor", lambda t: T([t.item() * 3 + 1, t.item() - 2]), (T(3, dtype=torch.int32),), True),
    # int64 ints: Python's grow
    ("n * n * n of an int64 item", lambda t: t.item() * t.item() * t.item(), (T(2**40), T(-2**40), T(3)), False),
    ("torch.tensor([n + n]) of an int64 item", lambda t: T([t.item() + t.item()]), (T(2**62), T(5)), False),
    ("-n of an int64 item", lambda t: -t.item(), (T(-2**63), T(4)), False),
    ("n // 2 and n % 3 of an int64 item", lambda t: (t.item() // 2, t.item() % 3, t.item() // -3), (T(2**62 + 7), T(-7)), True),
    ("an int64 item with a float: * + /", lambda t: (t.item() * 0.5, t.item() + 0.25, t.item() / 4.0),
     (T(2**62 + 1), T(-(2**53) - 1), T(7)), True),
    ("an int64 item / an int", lambda t: t.item() / 3, (T(2**62 + 1), T(7)), False),
    ("ints beyond 2**53 compared", lambda t: T([t.tolist()[0] == t.tolist()[1] - 1, t.tolist()[0] < t.tolist()[1], t.tolist()[0] == 2.0**60]),
     (T([2**60, 2**60 + 1]),), False),
    # float % and //: Python's sign of zero
    ("float % and // with constants", lambda t: T([t.item() % 2.5, t.item() // 2.5, t.item() % -2.5, t.item() // -2.5],
                                                 dtype=torch.float64),
     (T(-7.5, dtype=torch.float64), T(7.5, dtype=torch.float64), T(5.0, dtype=torch.float64),
      T(-1e-300, dtype=torch.float64), T(float("inf"), dtype=torch.float64)), True),
    # constructors with a dtype: eager stores the scalar checked in narrow
    # ints (300 in uint8 raises), unchecked in float32 (1e300 is inf); full
    # converts checked (the session-25 review's cap_tensor_ctor.py)
    ("torch.tensor([n], dtype=int32 / uint8) of an int item",
     lambda t: (T([t.item()], dtype=torch.int32), T([t.item()], dtype=torch.uint8)), (T(2**40 + 3), T(300), T(5)), False),
    ("torch.full((2,), n, dtype=int8) of an int item", lambda t: torch.full((2,), t.item(), dtype=torch.int8),
     (T(300), T(5)), False),
    ("torch.tensor(tolist(), dtype=int8)", lambda t: T(t.reshape(1).repeat(3).tolist(), dtype=torch.int8),
     (T(2**40 + 3), T(300), T(5)), False),
    ("torch.tensor([float item * 1e300]) in float32", lambda t: T([t.item() * 1e300]),
     (T(2.5, dtype=torch.float64), T(-0.5, dtype=torch.float64)), True),
    ("torch.full((2,), n) of an int item", lambda t: torch.full((2,), t.item()), (T(2**40 + 3), T(-5)), True),
    ("1 / (n % 2.5)", lambda t: 1.0 / T([t.item() % 2.5]), (T(-7.5, dtype=torch.float64), T(7.5, dtype=torch.float64)), True),
]


def check_case(mode, name, fn, inputs, traced):
    tracejit.reset()
    compiled = tracejit.compile(fn, backend=BACKEND)
    for arg in inputs:
        want = run(fn, arg)
        got = run(compiled, arg)
        check_equal(got, want, f"{mode}: {name} with {arg.tolist()!r}: as eager")
    if traced is None:  # eager raises: the exception above is what is checked
        return
    ex = tracejit.explain(fn)(inputs[-1].clone())  # the last input: one eager runs without raising
    reasons = "; ".join(r.reason[:120] for r in ex.break_reasons[:2])
    if traced:
        check_equal((ex.graph_count, ex.graph_break_count), (1, 0), f"{mode}: {name}: one graph ({reasons})")
    else:
        check(ex.graph_break_count >= 1 or ex.graph_count == 0, f"{mode}: {name}: the number's use breaks ({reasons})")


for capture in (True, False):
    tracejit.config.capture_scalar_outputs = capture
    mode = "capture_scalar_outputs=True" if capture else "default config"
    for case in CASES:
        check_case(mode, *case)

finish()
