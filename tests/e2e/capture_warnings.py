"""Issue 42: `warnings.warn` in traced code (inlined library code, the
compiled function itself) is part of the graph's frame, not a break: each
call is replayed after the graph in program order with the location eager
names (file, line, category, message), so filters, "once per location",
`catch_warnings(record=True)` and `-W error` behave as in eager."""
import sys
import warnings

import torch

import tracejit
import warn_pkg
from e2e_util import BACKEND, check, check_equal, finish


def top(x):
    warnings.warn("in the compiled function")
    return x.sin()


def library(x):
    return warn_pkg.scaled(x) + 1


def named_caller(x):
    return warn_pkg.caller_named(x) * 3


def two_up(x):
    return warn_pkg.via(x)


def above_frame(x):
    warnings.warn("named by my caller", UserWarning, stacklevel=2)
    return x.cos()


def two_warnings(x):
    y = x * 2
    warnings.warn("first", RuntimeWarning)
    warnings.warn("second", category=DeprecationWarning, stacklevel=1)
    return y + 1


def run_recorded(fn, x, calls=3):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        results = [fn(x) for _ in range(calls)]
    return results, [(w.category.__name__, str(w.message), w.filename, w.lineno) for w in seen]


def call_site(fn, x):  # the line that calls fn: what stacklevel=2 above the frame names
    return fn(x)


x = torch.randn(5)
for fn in (top, library, named_caller, two_up, two_warnings):
    tracejit.reset()
    want, want_warnings = run_recorded(fn, x)
    compiled = tracejit.compile(fn, backend=BACKEND)
    got, got_warnings = run_recorded(compiled, x)
    check(all(torch.allclose(a, b) for a, b in zip(got, want)), f"{fn.__name__}: values equal eager's")
    check_equal(got_warnings, want_warnings, f"{fn.__name__}: the warnings eager gives, each call")
    ex = tracejit.explain(fn)(x)
    check_equal((ex.graph_count, ex.graph_break_count), (1, 0), f"{fn.__name__}: one graph, no break")

# stacklevel above the compiled frame: the caller's line, known at run time
tracejit.reset()
compiled = tracejit.compile(above_frame, backend=BACKEND)
_, want_warnings = run_recorded(lambda t: call_site(above_frame, t), x, calls=2)
_, got_warnings = run_recorded(lambda t: call_site(compiled, t), x, calls=2)
check_equal(got_warnings, want_warnings, "stacklevel=2 of the compiled frame names its caller's line")

# the default filter: once per location, as eager
tracejit.reset()
compiled = tracejit.compile(library, backend=BACKEND)
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("default")
    warn_pkg.__dict__.pop("__warningregistry__", None)
    for _ in range(3):
        compiled(x)
check_equal(len(seen), 1, "the default filter shows a location's warning once, as eager")

# -W error semantics: the warning raises
tracejit.reset()
compiled = tracejit.compile(top, backend=BACKEND)
with warnings.catch_warnings():
    warnings.simplefilter("error")
    try:
        compiled(x)
        raised = None
    except UserWarning as e:
        raised = str(e)
check_equal(raised, "in the compiled function", "a filter that makes the warning an error raises it")
finish()
