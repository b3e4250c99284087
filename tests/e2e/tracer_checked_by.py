"""The tracer issue's "Checked by" scenario: a function of tensor
arithmetic, tensor methods, torch functions, Python constants and
shape-dependent ifs compiles to one graph with no break and returns eager's
results; a call with a new shape recompiles once and the old shape still
hits the cache."""
import torch
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

SCALE = 0.5
NAMES = ("hidden", "pooled")


def model(x, w, b):
    h = x @ w + b  # tensor arithmetic
    h = h * SCALE - 1.0 / 3  # Python constants
    if h.shape[0] > 2:  # shape-dependent ifs
        h = F.gelu(h)
    else:
        h = torch.tanh(h)
    if x.dim() == 2 and x.size(1) % 2 == 0:
        h = h + x.sum(dim=1, keepdim=True)
    n = h.shape[-1]
    pooled = torch.softmax(h, dim=-1).mean(0)  # torch functions, methods
    scores = h.view(-1, n).transpose(0, 1).contiguous().clamp(min=-2.0, max=2.0)
    return {NAMES[0]: h, NAMES[1]: pooled, "scores": scores, "n": n}


def make(rows, seed=0):
    torch.manual_seed(seed)
    return torch.randn(rows, 6), torch.randn(6, 5), torch.randn(5)


def same(want, got, what):
    check_equal(type(got), type(want), f"{what}: result type")
    check_equal(list(got), list(want), f"{what}: result keys")
    for k, w in want.items():
        g = got[k]
        if isinstance(w, torch.Tensor):
            check(isinstance(g, torch.Tensor) and g.shape == w.shape and torch.allclose(g, w, atol=1e-6),
                  f"{what}: {k} matches eager")
        else:
            check_equal(g, w, f"{what}: {k}")


# explain: one graph, no break.
tracejit.reset()
e = tracejit.explain(model)(*make(4))
check_equal(e.graph_count, 1, "explain: graph_count")
check_equal(e.graph_break_count, 0, "explain: graph_break_count")
check_equal(e.break_reasons, [], "explain: no break reasons")
check(e.op_count >= 10, f"explain: op_count counts the ATen ops ({e.op_count})")
check_equal(len(e.graphs), 1, "explain: one GraphModule")
check("gelu" in str(e) and "tanh" not in str(e), "explain: the graph took the shape-dependent branch")

# Compiled against eager, first shape.
tracejit.reset()
compiled = tracejit.compile(model, backend=BACKEND)
same(model(*make(4)), compiled(*make(4)), "4 rows")
c = tracejit.counters()
check_equal((c["frames_traced"], c["graphs_compiled"], c["graph_breaks"], c["recompiles"]), (1, 1, 0, 0),
            "first call: one frame traced, one graph, no break, no recompile")

# Same shape again: a cache hit, no retrace.
same(model(*make(4, seed=1)), compiled(*make(4, seed=1)), "4 rows, other values")
c = tracejit.counters()
check_equal(c["cache_hits"], 1, "same shape: a cache hit")
check_equal(c["frames_traced"], 1, "same shape: not traced again")

# A new shape (that also flips the shape-dependent if): one recompile.
same(model(*make(2)), compiled(*make(2)), "2 rows (the other branch)")
c = tracejit.counters()
check_equal(c["recompiles"], 1, "new shape: recompiles once")
check_equal(c["graphs_compiled"], 2, "new shape: a second graph")
check_equal(c["graph_breaks"], 0, "new shape: still no graph break")

# The old shape still hits the cache.
same(model(*make(4, seed=2)), compiled(*make(4, seed=2)), "4 rows again")
c = tracejit.counters()
check_equal(c["recompiles"], 1, "old shape: no further recompile")
check_equal(c["cache_hits"], 2, "old shape: hits the cache")
check_equal(c["frames_traced"], 2, "old shape: not traced again")

# fullgraph=True accepts the whole function.
tracejit.reset()
same(model(*make(3)), tracejit.compile(model, backend=BACKEND, fullgraph=True)(*make(3)), "fullgraph=True")

# The default backend (and aot_eager) give the same results.
for backend in (None, "aot_eager"):
    tracejit.reset()
    fc = tracejit.compile(model) if backend is None else tracejit.compile(model, backend=backend)
    name = backend or "default backend"
    same(model(*make(4)), fc(*make(4)), name)
    same(model(*make(2)), fc(*make(2)), f"{name}, new shape")
    c = tracejit.counters()
    check_equal((c["graphs_compiled"], c["recompiles"], c["graph_breaks"]), (2, 1, 0),
                f"{name}: two graphs, one recompile, no break")

finish()
