"""A custom backend callable gets (graph_module, example_inputs): a
tracejit.GraphModule of the ATen-level graph (with .code, .print_readable(),
callable on tensors) and the real tensors of the first call; what it returns
is called with the graph's inputs on this and later calls. A backend that
fails falls back to running the graph eagerly, with a warning."""
import contextlib
import io
import warnings

import torch

import tracejit
from e2e_util import check, check_equal, finish


class RecordingBackend:
    def __init__(self):
        self.compiles = []  # (graph_module, example_inputs)
        self.runs = 0

    def __call__(self, gm, example_inputs):
        self.compiles.append((gm, list(example_inputs)))

        def run(*inputs):
            self.runs += 1
            return gm(*inputs)

        return run


def fn(x, w):
    h = torch.relu(x @ w) * 2
    return h.sum(dim=1), h.shape[1]


torch.manual_seed(0)
x, w = torch.randn(4, 3), torch.randn(3, 5)

tracejit.reset()
backend = RecordingBackend()
compiled = tracejit.compile(fn, backend=backend)
got = compiled(x, w)
want = fn(x, w)
check(torch.allclose(got[0], want[0]) and got[1] == want[1], "custom backend: result matches eager")
check_equal(len(backend.compiles), 1, "the backend compiled one graph")
check_equal(backend.runs, 1, "its callable ran once")

gm, examples = backend.compiles[0]
check(hasattr(tracejit, "GraphModule") and isinstance(gm, tracejit.GraphModule), "graph_module is a tracejit.GraphModule")
check(len(examples) == 2 and examples[0] is x and examples[1] is w, "example_inputs are the real tensors of the first call")
code = gm.code
check(isinstance(code, str) and "def forward" in code, "GraphModule.code is Python source")
check("aten.matmul" in code and "aten.relu" in code and "aten.sum" in code, "the graph is ATen-level (matmul, relu, sum)")
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    readable = gm.print_readable()
check("forward" in buf.getvalue() or (isinstance(readable, str) and "forward" in readable), "print_readable() shows forward")
out = gm(x, w)
check(isinstance(out, (tuple, list)) and len(out) == 1 and torch.allclose(out[0], want[0]),
      "the GraphModule is callable on tensors and returns a tuple of outputs")

# Later calls run the backend's callable; a new shape compiles again.
x2 = torch.randn(4, 3)
got = compiled(x2, w)
check(torch.allclose(got[0], fn(x2, w)[0]), "cache hit: result matches eager")
check_equal((len(backend.compiles), backend.runs), (1, 2), "cache hit: no new compile, the callable ran again")
x3 = torch.randn(6, 3)
got = compiled(x3, w)
check(torch.allclose(got[0], fn(x3, w)[0]), "new shape: result matches eager")
check_equal((len(backend.compiles), backend.runs), (2, 3), "new shape: the backend compiled a second graph")
check(backend.compiles[1][1][0] is x3, "new shape: example_inputs are that call's tensors")

# explain() hands back the same kind of GraphModule.
e = tracejit.explain(fn)(x, w)
check(e.graph_count == 1 and isinstance(e.graphs[0], tracejit.GraphModule), "explain().graphs holds a GraphModule")
check_equal(e.graphs[0].code, gm.code, "explain's graph is the graph the backend got")

# A frame with no tensor work never reaches the backend.
def no_tensor_work(x):
    return x


tracejit.reset()
backend = RecordingBackend()
check(tracejit.compile(no_tensor_work, backend=backend)(x) is x, "no tensor work: the input comes back")
check_equal(len(backend.compiles), 0, "no tensor work: the backend is not called")


# Failing backends fall back to eager with a warning (suppress_errors=True).
def not_callable(gm, example_inputs):
    return 3


def raises(gm, example_inputs):
    raise RuntimeError("backend exploded")


def g(x):
    return x * 3 + 1


for bad, what in ((not_callable, "a non-callable result"), (raises, "an exception")):
    tracejit.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = tracejit.compile(g, backend=bad)(x)
    check(torch.allclose(got, g(x)), f"backend returning {what}: falls back to eager results")
    check(len(caught) >= 1, f"backend returning {what}: a warning ({caught[0].message if caught else 'none'})")

finish()
