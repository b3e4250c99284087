"""Issue 42: `p.data = t` traced as eager's THPVariable_set_data: the
tensor keeps its identity, requires_grad and version counter and takes
t's memory, sizes and dtype. The assignment is replayed after the graph;
in the trace p stands for t's memory, so later reads, views and in-place
writes see it. A leaf that requires grad used in grad mode after its .data
was assigned is a break at that use (autograd's leaf is not in the graph),
with a reason naming it. Compiled and eager runs on twin inputs are
compared: results, the tensors' values, identity, dtype, storage sharing,
_version, and graphs/breaks from tracejit.explain."""
import copy

import torch
import torch.nn as nn

import tracejit
from e2e_util import BACKEND, check, check_equal, check_raises, finish

torch.manual_seed(0)


def counts(fn, *args):
    ex = tracejit.explain(fn)(*args)
    return (ex.graph_count, ex.graph_break_count), "; ".join(r.reason[:200] for r in ex.break_reasons[:3])


def same_params(a, b):
    pa, pb = list(a.parameters()), list(b.parameters())
    return len(pa) == len(pb) and all(x.dtype == y.dtype and torch.equal(x, y) for x, y in zip(pa, pb))


x = torch.randn(4, 8)


# ---- WGAN-style weight clipping, then an inference forward: one graph
def clip_then_forward(model, x):
    for p in model.parameters():
        p.data = p.data.clamp(-0.05, 0.05)
    with torch.no_grad():
        return model(x)


tracejit.reset()
eager_m = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
comp_m = copy.deepcopy(eager_m)
params_before = list(comp_m.parameters())
versions_before = ([p._version for p in eager_m.parameters()], [p._version for p in comp_m.parameters()])
want = clip_then_forward(eager_m, x)
got = tracejit.compile(clip_then_forward, backend=BACKEND)(comp_m, x)
check(torch.allclose(got, want, atol=1e-6), "clip .data then forward: same result")
check(same_params(comp_m, eager_m), "clip .data then forward: parameters as eager's")
check(all(a is b for a, b in zip(comp_m.parameters(), params_before)), "clip .data: the same Parameter objects")
check(all(p.requires_grad and isinstance(p, nn.Parameter) for p in comp_m.parameters()),
      "clip .data: still Parameters that require grad")
check_equal([p._version - v for p, v in zip(comp_m.parameters(), versions_before[1])],
            [p._version - v for p, v in zip(eager_m.parameters(), versions_before[0])],
            "clip .data: version counters moved as eager's")
c, why = counts(clip_then_forward, copy.deepcopy(eager_m), x)
check_equal(c, (1, 0), f"clip .data then forward: graphs/breaks {why}")


# ---- a buffer (no grad) replaced through .data and read in grad mode: one graph
class Running(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(8))
        self.lin = nn.Linear(8, 3)

    def forward(self, x):
        self.mean.data = 0.9 * self.mean.data + 0.1 * x.mean(0)
        return self.lin(x - self.mean).sum()


tracejit.reset()
eager_r = Running()
comp_r = copy.deepcopy(eager_r)
compiled_r = tracejit.compile(comp_r, backend=BACKEND)
buffer_obj = comp_r.mean
for i in range(3):
    xi = torch.randn(4, 8)
    want = eager_r(xi)
    got = compiled_r(xi)
    want.backward()
    got.backward()
    check(torch.allclose(got, want, atol=1e-5), f"buffer .data = t, step {i}: same loss")
    check(torch.allclose(comp_r.mean, eager_r.mean, atol=1e-6), f"buffer .data = t, step {i}: buffer as eager's")
    check(torch.allclose(comp_r.lin.weight.grad, eager_r.lin.weight.grad, atol=1e-5),
          f"buffer .data = t, step {i}: gradients as eager's")
check(comp_r.mean is buffer_obj and not comp_r.mean.requires_grad, "buffer .data = t: the same buffer object")
c, why = counts(Running.forward, copy.deepcopy(eager_r), x)
check_equal(c, (1, 0), f"buffer .data = t: graphs/breaks {why}")


# ---- another dtype, and requires_grad read back
def to_double(p):
    p.data = p.data.to(torch.float64) * 2
    return p.dtype, p.requires_grad, p.shape


tracejit.reset()
ep = nn.Parameter(torch.randn(3, 2))
cp = nn.Parameter(ep.detach().clone())
want = to_double(ep)
got = tracejit.compile(to_double, backend=BACKEND)(cp)
check_equal(got, want, ".data = t of another dtype: dtype, requires_grad, shape read back")
check(cp.dtype == torch.float64 and torch.equal(cp, ep) and cp.requires_grad, ".data = t of another dtype: as eager's")
c, why = counts(to_double, nn.Parameter(torch.randn(3, 2)))
check_equal(c, (1, 0), f".data = t of another dtype: graphs/breaks {why}")


# ---- .data = another input: p shares q's memory, later writes through p reach q
def share(p, q):
    p.data = q
    p.add_(1)
    return p * 2, p.shape


tracejit.reset()
ep, eq = torch.zeros(5), torch.arange(6.0).reshape(2, 3)
cp, cq = ep.clone(), eq.clone()
want = share(ep, eq)
got = tracejit.compile(share, backend=BACKEND)(cp, cq)
check(torch.equal(got[0], want[0]) and got[1] == want[1], ".data = input: same result")
check(torch.equal(cq, eq) and torch.equal(cp, ep), ".data = input: writes through p reach q, as eager's")
check(cp.data_ptr() == cq.data_ptr(), ".data = input: p shares q's memory")
c, why = counts(share, torch.zeros(5), torch.zeros(2, 3))
check_equal(c, (1, 0), f".data = input: graphs/breaks {why}")


# ---- a leaf that requires grad, used with grad after .data was assigned: a break at that use
def reinit_then_use(lin, x):
    lin.weight.data = torch.full_like(lin.weight, 0.25)
    y = x * 3
    return lin(y).sum()


tracejit.reset()
eager_l = nn.Linear(8, 2)
comp_l = copy.deepcopy(eager_l)
want = reinit_then_use(eager_l, x)
got = tracejit.compile(reinit_then_use, backend=BACKEND)(comp_l, x)
want.backward()
got.backward()
check(torch.allclose(got, want, atol=1e-5), ".data then use with grad: same result")
check(torch.equal(comp_l.weight, eager_l.weight), ".data then use with grad: weight as eager's")
check(torch.allclose(comp_l.weight.grad, eager_l.weight.grad, atol=1e-5), ".data then use with grad: weight's gradient")
ex = tracejit.explain(reinit_then_use)(copy.deepcopy(eager_l), x)
check(ex.graph_break_count == 1 and any("whose .data the graph assigned" in r.reason for r in ex.break_reasons),
      "a leaf used with grad after its .data was assigned: one break naming it: "
      + "; ".join(r.reason[:200] for r in ex.break_reasons))


# ---- what eager refuses is refused the same way
def assign_number(p):
    p.data = 3
    return p


def assign_int_to_leaf(p):
    p.data = torch.ones(2, dtype=torch.long)
    return p


for fn, exc in ((assign_number, TypeError), (assign_int_to_leaf, RuntimeError)):
    tracejit.reset()
    e = check_raises(exc, lambda: fn(nn.Parameter(torch.randn(2))), f"{fn.__name__}: eager raises")
    cp = nn.Parameter(torch.randn(2))
    c = check_raises(exc, lambda: tracejit.compile(fn, backend=BACKEND)(cp), f"{fn.__name__}: compiled raises")
    check(e is not None and c is not None and str(e) == str(c), f"{fn.__name__}: the same error")
    check(cp.dtype == torch.float32, f"{fn.__name__}: the tensor unchanged")


# ---- a tensor made in the graph: eager's result, a break naming it
def made_in_graph(x, y):
    t = x * 2
    t.data = y
    return t + 1


tracejit.reset()
a, b = torch.randn(3), torch.randn(3)
check(torch.equal(tracejit.compile(made_in_graph, backend=BACKEND)(a, b), made_in_graph(a, b)),
      ".data of a tensor made in the graph: same result")
ex = tracejit.explain(made_in_graph)(a, b)
check(any("Tensor.data of a tensor made in the graph" in r.reason for r in ex.break_reasons),
      ".data of a tensor made in the graph: a break naming it")

finish()
