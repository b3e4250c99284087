"""tracejit.explain of a function or module compiled by tracejit.compile
explains it with the backend and options it was compiled with, not with
tracejit.config.backend."""
import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, check_raises, finish


class Recording:
    def __init__(self):
        self.compiles = 0

    def __call__(self, gm, example_inputs):
        self.compiles += 1
        return gm


def fn(x):
    return (x.sin() + 1).relu() * 2


x = torch.randn(4, 5)

rec = Recording()
cf = tracejit.compile(fn, backend=rec)
ex = tracejit.explain(cf)(x)
check_equal(rec.compiles, 1, "explain of a function compiled with a callable backend compiles with that backend")
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "... one graph")
check(torch.allclose(ex.result, fn(x)), "... and returns its result")

# A compiled module, and a method of a compiled function.
rec_m = Recording()
lin = torch.nn.Linear(5, 3)
cm = tracejit.compile(lin, backend=rec_m)
ex = tracejit.explain(cm)(x)
check_equal(rec_m.compiles, 1, "explain of a compiled module compiles with its backend")
check(torch.allclose(ex.result, lin(x)), "... and returns its result")


class Holder:
    def __init__(self):
        self.scale = 3.0

    def run(self, t):
        return t.cos() * self.scale


rec_h = Recording()
Holder.run = tracejit.compile(Holder.run, backend=rec_h)
holder = Holder()
ex = tracejit.explain(holder.run)(x)
check_equal(rec_h.compiles, 1, "explain of a compiled method compiles with its backend")
check(torch.allclose(ex.result, x.cos() * 3.0), "... bound to its object")

# A named backend: "eager" never runs AOT, whatever config.backend is.
saved = tracejit.config.backend
tracejit.config.backend = "aot_eager" if BACKEND == "eager" else BACKEND
try:
    tracejit.reset()
    ex = tracejit.explain(tracejit.compile(fn, backend="eager"))(x)
    check_equal(tracejit.counters()["aot_captures"], 0, "explain of a function compiled with eager does not run AOT")
    tracejit.reset()
    ex = tracejit.explain(fn)(x)
    check(tracejit.counters()["aot_captures"] > 0, "explain of a plain function uses config.backend (AOT ran)")
finally:
    tracejit.config.backend = saved


# The other options too: fullgraph makes a break raise.
def breaks(t):
    print("break")
    return t + 1


check_raises(tracejit.Unsupported, lambda: tracejit.explain(tracejit.compile(breaks, backend=BACKEND, fullgraph=True))(x),
             "explain of a function compiled with fullgraph=True raises at a break")
ex = tracejit.explain(tracejit.compile(breaks, backend=BACKEND))(x)
check_equal(ex.graph_break_count, 1, "... and without it, explains the break")
finish()
