"""A Python error the tracer did not expect is never swallowed: when tracing
meets one (a user property raising its own exception class, or a
BaseException that is not an Exception), the trace ends with a reason that
names the error (explain, fullgraph=True's tracejit.Unsupported), and the
code runs in CPython from there, giving eager's result or raising eager's
exception. A lookup error (AttributeError) stays a plain break reason."""
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

finish()
