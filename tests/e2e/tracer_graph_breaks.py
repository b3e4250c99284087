"""Graph breaks seen from outside: a function the tracer cannot fully
handle returns eager's results, prints what it prints in eager's order,
and explain() names each break with its reason, file and line;
fullgraph=True raises tracejit.Unsupported naming the file and line;
tracejit.disable'd callees are never traced."""
import contextlib
import io
import os

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, check_raises, finish

HERE = os.path.basename(__file__)


def line_of(fn, marker):
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return next(first + i for i, text in enumerate(lines) if marker in text)


def with_print(x):
    y = x * 2 + 1
    print("between", y.shape[0])  # break: print
    return y.relu() - x


def with_item(x):
    s = x.sum()
    if s.item() > 0:  # break: item
        return x + s
    return x - s


@tracejit.disable
def helper(t):
    return t.cos()


def calls_disabled(x):
    y = x.sin()
    z = helper(y)  # break: disabled
    return y + z


def stdout_of(fn, *args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        result = fn(*args)
    return result, buf.getvalue()


torch.manual_seed(0)
x = torch.randn(4, 3)
for fn, marker, reason in ((with_print, "# break: print", "print"),
                           (with_item, "# break: item", "item"),
                           (calls_disabled, "# break: disabled", "disable")):
    name = fn.__name__
    line = line_of(fn, marker)
    tracejit.reset()
    want, want_out = stdout_of(fn, x.clone())
    got, got_out = stdout_of(tracejit.compile(fn, backend=BACKEND), x.clone())
    check(torch.allclose(got, want), f"{name}: compiled result matches eager")
    check_equal(got_out, want_out, f"{name}: prints what eager prints")
    got, _ = stdout_of(tracejit.compile(fn, backend=BACKEND), x.clone())
    check(torch.allclose(got, want), f"{name}: second call matches eager")
    check(tracejit.counters()["graph_breaks"] >= 1, f"{name}: the graph_breaks counter counts the break")

    e, _ = stdout_of(tracejit.explain(fn), x.clone())
    check_equal(e.graph_break_count, 1, f"{name}: explain graph_break_count")
    r = e.break_reasons[0] if e.break_reasons else None
    check(r is not None and reason in r.reason, f"{name}: break reason mentions {reason!r} ({r})")
    check(r is not None and os.path.basename(r.filename) == HERE and r.lineno == line,
          f"{name}: break reason points at {HERE}:{line}")
    check(f"{HERE}:{line}" in str(e), f"{name}: str(explain) shows file:line")
    check_equal(e.op_count, sum(str(g.graph).count("call_function") for g in e.graphs),
                f"{name}: op_count counts the ops of its graphs")

    tracejit.reset()
    err = check_raises(tracejit.Unsupported, lambda: stdout_of(tracejit.compile(fn, backend=BACKEND, fullgraph=True),
                                                               x.clone()),
                       f"{name}: fullgraph=True raises tracejit.Unsupported")
    if err is not None:
        check(f"{HERE}:{line}" in str(err) and reason in str(err), f"{name}: the message names the reason and {HERE}:{line}")

# The disabled helper itself never gets a frame traced, also when called directly.
tracejit.reset()
before = tracejit.counters()["frames_traced"]
check(torch.allclose(helper(x), x.cos()), "disabled function: runs")
check_equal(tracejit.counters()["frames_traced"], before, "disabled function: not traced")
check(torch.allclose(tracejit.compile(helper, backend=BACKEND)(x), x.cos()), "compile(disabled): still runs")
check_equal(tracejit.counters()["graphs_compiled"], 0, "compile(disabled): no graph")

finish()
