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


ints = lambda: (torch.arange(-2, 4),)  # noqa: E731
w = same_as_eager(unused_division_caught, ints, "an unused integer division by zero in a try")
check_equal(w["printed"], "caught ZeroDivisionError\n", "eager catches the division by zero")
w = same_as_eager(unused_remainder, ints, "an unused fmod by zero")
check_equal(w["exception"], ("RuntimeError", "ZeroDivisionError"), "eager raises for the unused fmod")
w = same_as_eager(unused_failure_after_input_write, lambda: (torch.randn(3, 2, dtype=torch.float64),),
                  "an input written, then an unused op failing")
check_equal(w["log"], [(3, 2)], "eager's side effect before the failing op")

finish()
