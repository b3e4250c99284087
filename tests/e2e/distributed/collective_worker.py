"""One rank of tests/e2e/compiler_collective.py: argv = scenario, rank,
world size, port. Prints one JSON line (the last) with what it saw; the
graphs are in the graph_code log on stderr."""
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

import tracejit

scenario, rank, world, port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
os.environ["MASTER_ADDR"] = "127.0.0.1"
os.environ["MASTER_PORT"] = port
dist.init_process_group("gloo", rank=rank, world_size=world)
torch.set_num_threads(1)
backend = os.environ.get("TRACEJIT_TEST_BACKEND", "eager")
result = {"rank": rank}


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(8, 4)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = h.view(x.shape[0], 2, 8).sum(1)  # reads the batch size
        return self.fc2(h)


def batch(step):
    # each rank a different batch size on its first step
    n = 4 + 2 * rank if step == 0 else 3 + (step * 5 + rank) % 6
    g = torch.Generator().manual_seed(1000 * rank + step)
    return torch.randn(n, 8, generator=g), torch.randn(n, 4, generator=g)


if scenario == "ddp":
    torch.manual_seed(0)
    eager_net, net = Net(), Net()
    net.load_state_dict(eager_net.state_dict())
    eager_ddp = torch.nn.parallel.DistributedDataParallel(eager_net)
    ddp = torch.nn.parallel.DistributedDataParallel(net)
    compiled = tracejit.compile(ddp, backend=backend)
    eager_opt = torch.optim.SGD(eager_net.parameters(), lr=0.05)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    losses, eager_losses = [], []
    for step in range(20):
        x, y = batch(step)
        for model, optimizer, out in ((eager_ddp, eager_opt, eager_losses), (compiled, opt, losses)):
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            out.append(loss.item())
    result.update(losses=losses, eager_losses=eager_losses,
                  params_equal=all(torch.allclose(a, b, rtol=1e-4, atol=1e-6)
                                   for a, b in zip(net.parameters(), eager_net.parameters())))
elif scenario == "break":
    def step(x, log):
        y = x * 2
        log("step")  # rank 0: print, a graph break; the other ranks: a no-op lambda, traced through
        return y + 1

    log = print if rank == 0 else (lambda s: None)
    compiled = tracejit.compile(step, backend=backend)
    x = torch.randn(4)
    outs = [compiled(x, log) for _ in range(3)]
    result.update(values_ok=all(torch.equal(o, x * 2 + 1) for o in outs))
elif scenario == "collectives":
    def communicate(x):
        y = x * 2
        dist.all_reduce(y)  # runs in CPython between two graphs, on every rank alike
        gathered = [torch.empty_like(y) for _ in range(world)]
        dist.all_gather(gathered, y - 1)
        z = torch.stack(gathered).sum(0)
        dist.broadcast(z, src=1)
        return z + 1

    torch.manual_seed(rank)
    x = torch.randn(5)
    want = communicate(x)
    compiled = tracejit.compile(communicate, backend=backend)
    got = [compiled(x) for _ in range(2)]
    result.update(values_ok=all(torch.allclose(g, want) for g in got))
elif scenario in ("sizebranch", "recompile"):
    # The same program on every rank; only rank 1 (its sizes) reaches the print.
    limit = 4 if scenario == "sizebranch" else 8

    def step(x):
        y = x * 2
        if x.shape[0] > limit:
            print("big batch")
        return y + 1

    compiled = tracejit.compile(step, backend=backend)
    sizes = [4 + 2 * rank] * 3 if scenario == "sizebranch" else ([4, 10] if rank == 0 else [6, 6])
    result.update(values_ok=all(torch.equal(compiled(torch.ones(n)), torch.ones(n) * 2 + 1) for n in sizes))
elif scenario == "order":
    # Against the rule: the ranks first compile different functions.
    def f_a(x):
        return x * 2 + 1

    def f_b(x):
        return x.sin() - 1

    fns = {"a": (f_a, tracejit.compile(f_a, backend=backend)), "b": (f_b, tracejit.compile(f_b, backend=backend))}
    x = torch.arange(4.0)
    order = ["a", "b", "a", "b"] if rank == 0 else ["b", "a", "b", "a"]
    result.update(values_ok=all(torch.allclose(fns[k][1](x), fns[k][0](x)) for k in order))
elif scenario == "marked":
    def step(x):
        return x.view(x.shape[0], -1).sum(1) * 2

    compiled = tracejit.compile(step, backend=backend)
    first = torch.randn(6, 4)
    if rank == 0:
        tracejit.mark_dynamic(first, 0)
    inputs = [first, torch.randn(5, 4), torch.randn(9, 4)]
    result.update(values_ok=all(torch.allclose(compiled(t), step(t)) for t in inputs))
elif scenario == "duck":
    # dynamic=True: rank 0's first sizes coincide (x and y both 6 long),
    # rank 1's do not. Duck sizing over every rank's sizes keeps two
    # symbols on both, so the ranks trace one graph and compile it.
    def step(x, y):
        return x.view(x.shape[0], -1).sum(1) * 2, y.view(y.shape[0], -1).sum(1) * 3

    compiled = tracejit.compile(step, backend=backend, dynamic=True)
    inputs = [(torch.randn(6, 2), torch.randn(6, 3)), (torch.randn(5, 2), torch.randn(7, 3))] if rank == 0 else \
        [(torch.randn(5, 2), torch.randn(7, 3)), (torch.randn(6, 2), torch.randn(6, 3))]
    result.update(values_ok=all(all(torch.allclose(g, e) for g, e in zip(compiled(*a), step(*a))) for a in inputs))
result["counters"] = tracejit.counters()
dist.barrier()
dist.destroy_process_group()
print(json.dumps(result))
