"""A Python error the tracer did not expect is never swallowed: when tracing
meets one (a user property raising its own exception class, or a
BaseException that is not an Exception), the trace ends with a reason that
names the error (explain, fullgraph=True's tracejit.Unsupported), and the
code runs in CPython from there, giving eager's result or raising eager's
exception. A lookup error (AttributeError) stays a plain break reason.

The tracer's own probes are held to the same rule: hasattr() and
getattr(o, k, default) on an object whose __getattr__ raises something other
than AttributeError raise it as in eager (the probe does not read it as
"absent"), and an error left set while the outputs are planned (a
namedtuple class whose _make raises) makes the frame run unchanged."""
import collections
import os

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, check_raises, finish

HERE = os.path.basename(__file__)


class Boom(Exception):
    pass


class Stop(BaseException):  # like KeyboardInterrupt: not an Exception
    pass


class Holder:
    @property
    def scale(self):
        raise Boom("scale is not ready")

    @property
    def stop(self):
        raise Stop("stopped")

    @property
    def absent(self):
        raise AttributeError("absent is absent")


def caught(x, h):
    y = x * 2
    try:
        s = h.scale
    except Boom:
        s = 3
    return y + s


def uncaught(x, h):
    y = x.sin()
    return y + h.scale


def caught_base(x, h):
    y = x.cos()
    try:
        s = h.stop
    except Stop:
        s = -1
    return y * s


def lookup_error(x, h):
    y = x + 1
    try:
        s = h.absent
    except AttributeError:
        s = 5
    return y - s


torch.manual_seed(0)
x = torch.randn(4, 3)
h = Holder()

for fn, error in ((caught, "Boom: scale is not ready"), (caught_base, "Stop: stopped")):
    name = fn.__name__
    tracejit.reset()
    want = fn(x.clone(), h)
    got = tracejit.compile(fn, backend=BACKEND)(x.clone(), h)
    check(torch.allclose(got, want), f"{name}: compiled result matches eager")
    got = tracejit.compile(fn, backend=BACKEND)(x.clone(), h)
    check(torch.allclose(got, want), f"{name}: second call matches eager")
    e = tracejit.explain(fn)(x.clone(), h)
    check(torch.allclose(e.result, want), f"{name}: explain's run matches eager")
    reasons = [r.reason for r in e.break_reasons]
    check(any("unexpected Python error" in r and error in r for r in reasons),
          f"{name}: a break reason names the unexpected error {error!r} ({reasons})")
    check(all(os.path.basename(r.filename) == HERE for r in e.break_reasons if error in r.reason),
          f"{name}: the reason points into {HERE}")
    tracejit.reset()
    err = check_raises(tracejit.Unsupported, lambda: tracejit.compile(fn, backend=BACKEND, fullgraph=True)(x.clone(), h),
                       f"{name}: fullgraph=True raises tracejit.Unsupported")
    if err is not None:
        check(error in str(err), f"{name}: the Unsupported message names {error!r}")

# Not caught: the compiled function raises eager's exception, type and message.
tracejit.reset()
want = check_raises(Boom, lambda: uncaught(x.clone(), h), "uncaught: eager raises Boom")
got = check_raises(Boom, lambda: tracejit.compile(uncaught, backend=BACKEND)(x.clone(), h),
                   "uncaught: compiled raises Boom")
check_equal(str(got), str(want), "uncaught: the same message as eager")
got = check_raises(Boom, lambda: tracejit.compile(uncaught, backend=BACKEND)(x.clone(), h),
                   "uncaught: compiled raises Boom on the second call too")

# A lookup error is a probe's: a plain reason, no "unexpected".
tracejit.reset()
want = lookup_error(x.clone(), h)
got = tracejit.compile(lookup_error, backend=BACKEND)(x.clone(), h)
check(torch.allclose(got, want), "lookup_error: compiled result matches eager")
e = tracejit.explain(lookup_error)(x.clone(), h)
reasons = [r.reason for r in e.break_reasons]
check(bool(reasons) and not any("unexpected" in r for r in reasons),
      f"lookup_error: an AttributeError is not reported as unexpected ({reasons})")

# hasattr/getattr(o, k, default) treat only AttributeError as "absent".
class Lazy:
    def __init__(self, error):
        self.error = error

    def __getattr__(self, name):
        raise self.error(f"{name} is not loaded")


def probe_hasattr(x, o):
    y = x + 1
    if hasattr(o, "weight"):
        return y * 2
    return y - 1


def probe_getattr(x, o):
    y = x * 3
    w = getattr(o, "weight", None)
    return y if w is None else y + w


def caught_hasattr(x, o):
    y = x - 2
    try:
        has = hasattr(o, "weight")
    except RuntimeError:
        has = None
    return y * (3 if has is None else 4)


for fn in (probe_hasattr, probe_getattr):
    for error in (RuntimeError, Stop):
        name = f"{fn.__name__}/{error.__name__}"
        tracejit.reset()
        o = Lazy(error)
        want = check_raises(error, lambda: fn(x.clone(), o), f"{name}: eager raises")
        for attempt in ("first", "second"):
            got = check_raises(error, lambda: tracejit.compile(fn, backend=BACKEND)(x.clone(), o),
                               f"{name}: compiled raises {error.__name__} too ({attempt} call)")
            if got is not None and want is not None:
                check_equal(str(got), str(want), f"{name}: the same message as eager ({attempt} call)")
    # AttributeError is the probe's "absent": traced through, no break.
    tracejit.reset()
    o = Lazy(AttributeError)
    want = fn(x.clone(), o)
    got = tracejit.compile(fn, backend=BACKEND)(x.clone(), o)
    check(torch.allclose(got, want), f"{fn.__name__}/AttributeError: compiled result matches eager")
    e = tracejit.explain(fn)(x.clone(), o)
    check(e.graph_break_count == 0, f"{fn.__name__}/AttributeError: no graph break ({[r.reason for r in e.break_reasons]})")

tracejit.reset()
o = Lazy(RuntimeError)
want = caught_hasattr(x.clone(), o)
got = tracejit.compile(caught_hasattr, backend=BACKEND)(x.clone(), o)
check(torch.allclose(got, want), "caught_hasattr: compiled result matches eager (the RuntimeError is caught)")
e = tracejit.explain(caught_hasattr)(x.clone(), o)
reasons = [r.reason for r in e.break_reasons]
check(any("unexpected Python error" in r and "RuntimeError: weight is not loaded" in r for r in reasons),
      f"caught_hasattr: a break reason names the RuntimeError ({reasons})")


# An error left set at the end of the trace (output planning reads the
# namedtuple class's _make): the frame runs unchanged, the reason names it.
class MakeRaises(type):
    @property
    def _make(cls):
        raise Boom("_make is not ready")


Pair = MakeRaises("Pair", (collections.namedtuple("Pair", "a b"),), {})


def returns_pair(x):
    return Pair(x + 1, x * 2)


tracejit.reset()
want = returns_pair(x.clone())
try:
    got = tracejit.compile(returns_pair, backend=BACKEND)(x.clone())
except Exception as error:  # noqa: BLE001 - reported as the failed check
    got = error
check(type(got) is Pair and all(torch.allclose(g, w) for g, w in zip(got, want)),
      f"returns_pair: compiled result matches eager ({got!r:.100})")
try:
    reasons = [r.reason for r in tracejit.explain(returns_pair)(x.clone()).break_reasons]
except Exception as error:  # noqa: BLE001 - reported as the failed check
    reasons = [f"explain raised {error!r}"]
check(any("unexpected Python error was left set" in r and "Boom: _make is not ready" in r for r in reasons),
      f"returns_pair: the reason names the error left set at the end of the trace ({reasons})")
tracejit.reset()
err = check_raises(tracejit.Unsupported, lambda: tracejit.compile(returns_pair, backend=BACKEND, fullgraph=True)(x.clone()),
                   "returns_pair: fullgraph=True raises tracejit.Unsupported")
if err is not None:
    check("Boom: _make is not ready" in str(err), "returns_pair: the Unsupported message names the error")

finish()
