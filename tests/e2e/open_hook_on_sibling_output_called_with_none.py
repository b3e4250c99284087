"""OPEN defect (issue 39; the session-26 review; main `b6834c9` too),
registered as an expected failure: run once, on aot_eager and llvm.

A hook registered after the call on each returned output, and a loss of
one output only: eager never calls the hook of an output the loss does
not reach, where the outputs have nodes of their own (x.sin(), x.cos());
where they share one node (split, unbind) eager calls the others' hooks
with None. Compiled, outputs in one backward part (the compiled node's
grouping, not eager's) get the opposite: the sibling's hook is called with
None (a hook doing `g * 10` raises), or not called where eager calls it.
A fix: call a part's output hooks only for the outputs eager's graph
would, as its nodes group them.
Passes (and so fails the suite as an unexpected pass) once fixed."""
import torch

import tracejit
from e2e_util import check, finish

PROGRAMS = {
    "sin_cos": lambda x: (x.sin(), x.cos()),
    "stats": lambda x: (x.mean(), x.var()),
    "split": lambda x: x.mul(3).split(2),
    "unbind": lambda x: (x * 3).unbind(0),
}


def run(fn, k):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 4, generator=g).requires_grad_()
    outs = fn(x)
    seen = {}
    for i, o in enumerate(outs):
        o.register_hook(lambda g, i=i: seen.__setitem__(i, "None" if g is None else "tensor"))
    (outs[k] ** 2).sum().backward()
    return x.grad, seen


for backend in ("aot_eager", "llvm"):
    for name, fn in PROGRAMS.items():
        for k in (0, 1):
            want = run(fn, k)
            tracejit.reset()
            got = run(tracejit.compile(fn, backend=backend), k)
            check(torch.allclose(got[0], want[0]) and got[1] == want[1],
                  f"{backend}, {name}, loss of output {k}: hooks called {got[1]}, eager {want[1]}")

finish()
