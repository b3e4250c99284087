"""Issue 42: a torchvision model's whole training step as one compiled
graph. `step(model, opt, x, target)` = forward + cross-entropy + backward +
optimizer step + zero_grad, compiled as one function (not only the module),
on resnet18 with SGD (momentum) and mobilenet_v2 (dropout, batch norm,
depthwise convolutions) with Adam, small inputs, random weights, no
download. Each step is one graph with no break and no op-by-op fallback;
losses and final parameters equal eager's bit for bit on eager/aot_eager,
and on llvm lie no further from a float64 run than eager's (tracejit.same).
Batch-norm running statistics are judged against float64 on every backend:
AOT updates them explicitly in float (aot/capture.cpp, `batch_norm`) where
eager's kernel accumulates in double, a last-bit difference."""
import copy

import torch
import torch.nn.functional as F
import torchvision

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

EXACT = BACKEND in ("eager", "aot_eager")
STEPS = 3


def step(model, opt, x, target):
    loss = F.cross_entropy(model(x), target)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.detach()


def batches(dtype):
    gen = torch.Generator().manual_seed(1)
    return [(torch.randn(4, 3, 32, 32, generator=gen).to(dtype), torch.randint(0, 10, (4,), generator=gen))
            for _ in range(STEPS)]


def run(model, opt, fn, dtype):
    losses = []
    for i, (x, target) in enumerate(batches(dtype)):
        torch.manual_seed(100 + i)  # dropout draws the same masks in every run
        losses.append(fn(model, opt, x, target))
    return (torch.stack(losses), [p.detach() for p in model.parameters()],
            [b.detach() for b in model.buffers() if b.is_floating_point()])


def same(got, want, fp64):
    if EXACT:
        return all(g.dtype == w.dtype and torch.equal(g, w) for g, w in zip(got, want)) and len(got) == len(want)
    return tracejit.same(want, got, fp64)


CASES = [
    ("resnet18", lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9)),
    ("mobilenet_v2", lambda p: torch.optim.Adam(p, lr=1e-3)),
]

for name, make_opt in CASES:
    tracejit.reset()
    torch.manual_seed(0)
    ref = getattr(torchvision.models, name)(weights=None, num_classes=10).train()
    res, wide = copy.deepcopy(ref), copy.deepcopy(ref).double()
    probe = copy.deepcopy(ref)
    want = run(ref, make_opt(ref.parameters()), step, torch.float32)
    want64 = run(wide, make_opt(wide.parameters()), step, torch.float64)
    compiled = tracejit.compile(step, backend=BACKEND)
    before = tracejit.counters().get("backend_fallbacks", 0)
    got = run(res, make_opt(res.parameters()), compiled, torch.float32)
    check(same([got[0]], [want[0]], [want64[0]]), f"{name}: losses equal eager's ({got[0].tolist()})")
    check(same(got[1], want[1], want64[1]), f"{name}: final parameters equal eager's")
    check(tracejit.same(want[2], got[2], want64[2]), f"{name}: batch-norm running statistics as close to float64")
    check(all((p.grad is None) == (q.grad is None) and (p.grad is None or torch.equal(p.grad, q.grad))
              for p, q in zip(res.parameters(), ref.parameters())), f"{name}: .grad after zero_grad equal eager's")
    check_equal(tracejit.counters().get("backend_fallbacks", 0) - before, 0, f"{name}: no op-by-op fallback")
    tracejit.reset()
    x, target = batches(torch.float32)[0]
    ex = tracejit.explain(step)(probe, make_opt(probe.parameters()), x, target)
    why = " | ".join(r.reason for r in ex.break_reasons)
    check_equal((ex.graph_count, ex.graph_break_count), (1, 0), f"{name}: the training step is one graph [{why}]")

finish()
