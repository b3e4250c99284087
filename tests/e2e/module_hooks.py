"""nn.Module hooks in compiled code, as Module.__call__ runs them: forward
pre-hooks and forward hooks (torch's global ones first) of a module called
inside a compiled frame are traced into its graph, and every hook table is
guarded, so that a hook registered or removed after the first compiled call
retraces instead of being ignored (shared trial hook_after_compile.py).
Backward hooks break the graph: the module runs in CPython with them."""
import torch
import torch.nn as nn
import torch.nn.modules.module as module_py

import tracejit
from e2e_util import BACKEND, check, check_equal, finish


def same(a, b):
    return torch.allclose(a, b, rtol=1e-5, atol=1e-5)


torch.manual_seed(0)
x = torch.randn(3, 8)

# A forward hook registered after the first compiled call fires (the trial's first case).
m = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
cm = tracejit.compile(m, backend=BACKEND)
cm(x)
seen = []
h = m[1].register_forward_hook(lambda mod, i, o: seen.append("hook"))
before = tracejit.counters()["recompiles"]
cm(x)
cm(x)
check_equal(len(seen), 2, "a forward hook registered after the first compiled call fires at each call (eager: 2)")
check(tracejit.counters()["recompiles"] > before, "registering the hook recompiled the frame")
h.remove()
cm(x)
check_equal(len(seen), 2, "removed again, it no longer fires")

# A hook present at the first call and removed after it stops firing (the trial's second case).
m2 = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
seen2 = []
h2 = m2[1].register_forward_hook(lambda mod, i, o: seen2.append("hook"))
cm2 = tracejit.compile(m2, backend=BACKEND)
cm2(x)
h2.remove()
cm2(x)
check_equal(len(seen2), 1, "a hook removed after the first compiled call no longer fires (eager: 1)")

# A pre-hook that changes the input (the trial's third case: the output was wrong).
pre = m[0].register_forward_pre_hook(lambda mod, i: (i[0] * 0,))
check(same(cm(x), m(x)), "a pre-hook registered after compile that zeroes the input is honoured")
pre.remove()
check(same(cm(x), m(x)), "... and no longer once removed")
# One returning a single value instead of a tuple, and a forward hook replacing the output.
pre = m[0].register_forward_pre_hook(lambda mod, i: i[0] + 1)
post = m[2].register_forward_hook(lambda mod, i, o: o * 3 + i[0].sum())
check(same(cm(x), m(x)), "a pre-hook returning one value and a forward hook replacing the output")
pre.remove()
post.remove()
check(same(cm(x), m(x)), "both removed")


# Hooks present at trace time are traced: one graph, no break.
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 4)

    def forward(self, t):
        return self.b(self.a(t).relu())


net = Net()
calls = []
net.a.register_forward_pre_hook(lambda mod, i: (i[0] * 2,))
net.b.register_forward_hook(lambda mod, i, o: calls.append(o.shape) or o - 1)
got = tracejit.compile(net, backend=BACKEND)(x)
want = net(x)
check(same(got, want), "hooks present at trace time: result matches eager")
check_equal(len(calls), 2, "... and the hook's own side effect happened once per call")
ex = tracejit.explain(net)(x)
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "hooks present at trace time are traced into one graph")

# torch's global hooks (register_module_forward_hook) are guarded and traced too.
f = tracejit.compile(lambda t: net.b(t), backend=BACKEND)
y = torch.randn(2, 8)
base = f(y)
g = module_py.register_module_forward_hook(lambda mod, i, o: o * 10)
check(same(f(y), net.b(y)), "a global forward hook registered after compile is honoured")
g.remove()
check(same(f(y), base), "... and no longer once removed")

# A backward hook breaks the graph; the module runs with it in CPython.
lin = nn.Linear(8, 4)
grads = []
lin.register_full_backward_hook(lambda mod, gi, go: grads.append(go[0].shape))
fb = tracejit.compile(lambda t: lin(t).sum() * 2, backend=BACKEND)
fb(torch.randn(3, 8, requires_grad=True)).backward()
check_equal(len(grads), 1, "a module's backward hook runs once per backward")
ex = tracejit.explain(lambda t: lin(t).sum() * 2)(torch.randn(3, 8))
check(any("backward hooks" in r.reason for r in ex.break_reasons), "a module with backward hooks breaks, and explain says why")

finish()
