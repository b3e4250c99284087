"""A training step of torchvision's resnet18 (random weights) under
tracejit.compile: forward, cross-entropy loss, backward, SGD step; the
losses and parameters must equal eager's over 3 steps, with one graph."""
import copy
import os
import sys

import torch
import torch.nn.functional as F
import torchvision

import tracejit

BACKEND = os.environ.get("TRACEJIT_TEST_BACKEND", "eager")


def train(model, forward, steps=3):
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for i in range(steps):
        gen = torch.Generator().manual_seed(10 + i)
        x = torch.randn(4, 3, 32, 32, generator=gen)
        target = torch.randint(0, 10, (4,), generator=gen)
        opt.zero_grad()
        loss = F.cross_entropy(forward(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


torch.manual_seed(0)
ref = torchvision.models.resnet18(weights=None, num_classes=10).train()
mine = copy.deepcopy(ref)
want = train(ref, ref)
got = train(mine, tracejit.compile(mine, backend=BACKEND))
failures = []
if any(abs(a - b) > 1e-4 * max(1.0, abs(a)) for a, b in zip(got, want)):
    failures.append(f"losses differ: {got} vs {want}")
worst = max((p - q).abs().max().item() for p, q in zip(mine.parameters(), ref.parameters()))
if worst > 1e-4:
    failures.append(f"parameters differ after 3 steps (max abs diff {worst})")
worst_buf = max((p.float() - q.float()).abs().max().item() for p, q in zip(mine.buffers(), ref.buffers()))
if worst_buf > 1e-4:
    failures.append(f"batch-norm buffers differ after 3 steps (max abs diff {worst_buf})")
counters = tracejit.counters()
if counters["unique_graphs"] != 1 or counters["graph_breaks"] != 0:
    failures.append(f"want one graph and no break: {counters}")
if failures:
    print(f"FAIL resnet18 training ({BACKEND}):\n" + "\n".join(failures))
    sys.exit(1)
print(f"ok resnet18 training ({BACKEND}): losses {got} equal to eager, parameters and buffers too, {counters}")
