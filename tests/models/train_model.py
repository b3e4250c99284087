"""A training step of a torchvision model (random weights, no download)
under tracejit.compile, judged as TorchDynamo's accuracy checker judges
training: forward, cross-entropy loss, backward and an optimizer step, three
times, on three copies of one model: eager in float32 (the reference),
compiled in float32, and eager in float64. The compiled losses and final
parameters and buffers must be no further from the float64 run than eager's
are (tracejit.same with fp64_ref), since an optimizer like Adam turns
rounding noise in near-zero gradients into whole learning-rate steps (bit
equality with eager is not a property eager has with itself under another
kernel). The forward must be one graph with no break.

Usage: train_model.py MODEL_NAME OPTIMIZER   (OPTIMIZER: sgd or adam; run by
the launcher; the backend comes from TRACEJIT_TEST_BACKEND)."""
import copy
import os
import sys

import torch
import torch.nn.functional as F
import torchvision

import tracejit

BACKEND = os.environ.get("TRACEJIT_TEST_BACKEND", "eager")
STEPS = 3
INPUT_SIZE = {"densenet121": 32, "resnet18": 32}


def make_optimizer(name, params):
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3)
    sys.exit(f"unknown optimizer {name}")


def train(model, forward, optimizer, dtype, side):
    opt = make_optimizer(optimizer, model.parameters())
    losses = []
    for i in range(STEPS):
        gen = torch.Generator().manual_seed(10 + i)
        x = torch.randn(4, 3, side, side, generator=gen).to(dtype)
        target = torch.randint(0, 10, (4,), generator=gen)
        opt.zero_grad()
        loss = F.cross_entropy(forward(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return [torch.stack(losses), [p.detach() for p in model.parameters()],
            [b.detach() for b in model.buffers() if b.is_floating_point()]]


def main():
    name, optimizer = sys.argv[1], sys.argv[2]
    side = INPUT_SIZE.get(name, 32)
    torch.manual_seed(0)
    ref = getattr(torchvision.models, name)(weights=None, num_classes=10).train()
    mine = copy.deepcopy(ref)
    wide = copy.deepcopy(ref).double()
    want = train(ref, ref, optimizer, torch.float32, side)
    want64 = train(wide, wide, optimizer, torch.float64, side)
    got = train(mine, tracejit.compile(mine, backend=BACKEND), optimizer, torch.float32, side)
    failures = []
    for label, a, b, c in zip(("losses", "parameters", "batch-norm buffers"), want, got, want64):
        if not tracejit.same(a, b, c):
            worst = (max((x - y).abs().max().item() for x, y in zip(a, b)) if isinstance(a, list)
                     else (a - b).abs().max().item())
            failures.append(f"{label} further from float64 than eager's (max abs diff to eager {worst})")
    counters = tracejit.counters()
    if counters["unique_graphs"] != 1 or counters["graph_breaks"] != 0:
        failures.append(f"want one graph and no break: {counters}")
    if failures:
        print(f"FAIL {name} training with {optimizer} ({BACKEND}):\n" + "\n".join(failures))
        sys.exit(1)
    print(f"ok {name} training with {optimizer} ({BACKEND}): losses {got[0].tolist()} as close to float64 "
          f"as eager's {want[0].tolist()}; {counters}")


if __name__ == "__main__":
    main()
