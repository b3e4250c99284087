"""binary_cross_entropy fused (issue 41 item 3, graph/passes/decompose.h):
on the fusing backends the loss is LibTorch 1.13's CPU formula as pointwise
ops and a reduction (one llvm kernel) instead of ATen's scalar loop (its
backward likewise, pointwise), and
ATen's range check on the input stays: an input outside [0, 1] (NaN
included) still raises ATen's error, and a training step that raises
leaves the parameters as eager's does. Compiled against eager: a VAE-style
training step (sigmoid, then the loss, Adam), the three reductions,
float64, a weight (not taken: ATen's op), a target outside [0, 1] (ATen
1.13 does not check it). Values bit for bit on eager/aot_eager, within
float tolerance on llvm, where torch.profiler must also show no
`aten::binary_cross_entropy` or its backward (else this test would pass
without the change)."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, check, check_raises, finish, tensors_same

torch.manual_seed(0)
torch.set_num_threads(1)

net = nn.Sequential(nn.Linear(24, 32), nn.ReLU(), nn.Linear(32, 24))
net_c = copy.deepcopy(net)
opt, opt_c = torch.optim.Adam(net.parameters(), lr=1e-2), torch.optim.Adam(net_c.parameters(), lr=1e-2)


def step(model, opt, x):
    opt.zero_grad()
    loss = F.binary_cross_entropy(torch.sigmoid(model(x)), x, reduction="sum") / x.shape[0]
    loss.backward()
    opt.step()
    return loss


def params(model):
    return [p.detach().clone() for p in model.parameters()]


cstep = tracejit.compile(step, backend=BACKEND)
for i in range(4):
    x = torch.rand(16, 24)
    with torch.profiler.profile() as prof:
        got = cstep(net_c, opt_c, x)
    want = step(net, opt, x)
    check(tensors_same(got.detach(), want.detach(), rtol=1e-5, atol=1e-5), f"training step {i}: the loss")
    check(tensors_same(params(net_c), params(net), rtol=1e-4, atol=1e-6), f"training step {i}: the parameters")
    if BACKEND == "llvm" and i >= 2:  # Adam's first step and the second graph's first call compile
        names = [e.name for e in prof.events()]
        check("aten::binary_cross_entropy" not in names and any(n.startswith("tj::kernel") for n in names),
              f"training step {i}: the loss ran as a fused kernel, not ATen's op")
        check("aten::binary_cross_entropy_backward" not in names, f"training step {i}: and its gradient")


# Out of range: the step raises ATen's error before any update, as eager.
def bad_step(model, opt, x):
    opt.zero_grad()
    loss = F.binary_cross_entropy(torch.sigmoid(model(x)) * 2, x)  # up to 2: out of range
    loss.backward()
    opt.step()
    return loss


cbad = tracejit.compile(bad_step, backend=BACKEND)
for i in range(2):
    before = params(net_c)
    e = check_raises(RuntimeError, lambda: cbad(net_c, opt_c, torch.rand(16, 24)), f"input above 1: raises ({i})")
    check(e is not None and "all elements of input should be between 0 and 1" in str(e), "with ATen's message")
    check(all(torch.equal(a, b) for a, b in zip(params(net_c), before)), f"and the parameters are untouched ({i})")


def losses(x, y):
    return (F.binary_cross_entropy(x * 1.0, y), F.binary_cross_entropy(x * 1.0, y, reduction="sum"),
            F.binary_cross_entropy(x * 1.0, y, reduction="none"))


closses = tracejit.compile(losses, backend=BACKEND)
for dtype in (torch.float32, torch.float64):
    x, y = torch.rand(8, 50, dtype=dtype), torch.rand(8, 50, dtype=dtype)
    x[0, :3] = torch.tensor([0.0, 1.0, 1e-30], dtype=dtype)  # log's clamp at -100 and 1 - x rounded to 1
    y[0, :3] = torch.tensor([1.0, 0.0, 0.0], dtype=dtype)
    check(tensors_same(list(closses(x, y)), list(losses(x, y)), rtol=1e-5, atol=1e-6, dtypes=True),
          f"mean, sum, none ({dtype})")
    for bad in (float("nan"), -0.25, 1.5):
        xb = x.clone()
        xb[2, 7] = bad
        e = check_raises(RuntimeError, lambda: closses(xb, y), f"input {bad}: raises ({dtype})")
        check(e is not None and "all elements of input should be between 0 and 1" in str(e), "with ATen's message")

# The gradient of each reduction, float32 and float64 (x at 0 and 1: the 1e-12 floor).
def grads(x, y):
    out = []
    for reduction in ("mean", "sum", "none"):
        xr = (x * 1.0).detach().requires_grad_(True)
        loss = F.binary_cross_entropy(xr, y, reduction=reduction)
        (loss if reduction != "none" else loss * y).sum().backward()
        out.append(xr.grad)
    return out


cgrads = tracejit.compile(grads, backend=BACKEND)
for dtype in (torch.float32, torch.float64):
    x, y = torch.rand(8, 50, dtype=dtype), torch.rand(8, 50, dtype=dtype)
    x[0, :2] = torch.tensor([0.0, 1.0], dtype=dtype)
    check(tensors_same(cgrads(x, y), grads(x, y), rtol=1e-5, atol=1e-6, dtypes=True), f"the gradients ({dtype})")

# A target outside [0, 1] (LibTorch 1.13 does not check it) and a weight (ATen's op).
x, y = torch.rand(8, 50), torch.rand(8, 50) * 3 - 1
check(tensors_same(list(closses(x, y)), list(losses(x, y)), rtol=1e-5, atol=1e-6), "a target outside [0, 1]")
w = torch.rand(50)


def weighted(x, y, w):
    return F.binary_cross_entropy(x * 1.0, y, weight=w)


check(tensors_same(tracejit.compile(weighted, backend=BACKEND)(x, y.clamp(0, 1), w), weighted(x, y.clamp(0, 1), w)),
      "a weight")

finish()
