"""Modules that keep Python state, decorators, *args/**kwargs forwarding,
in-place updates of views: identical transcripts under python3.11 and
`tracejit --compile-all`."""
import functools

import torch
import torch.nn as nn

torch.manual_seed(2)


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        wrapper.calls += 1
        return fn(*args, **kwargs)

    wrapper.calls = 0
    return wrapper


class Stateful(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.register_buffer("seen", torch.zeros(3))
        self.history = []
        self.config = {"scale": 0.5, "names": ["a", "b"]}
        self.steps = 0

    @logged
    def forward(self, x, *extra, bias=0.0, **options):
        self.steps += 1
        y = self.lin(x) * self.config["scale"] + bias
        for e in extra:
            y = y + e
        if options.get("clamp"):
            y = y.clamp(-1, 1)
        self.seen.add_(y.detach().mean(0))
        self.history.append((self.steps, tuple(y.shape)))
        self.config["names"].append(f"step{self.steps}")
        return y, {"steps": self.steps, "norm": y.norm()}


def views_in_place(x):
    v = x[1:, :2]
    v.mul_(10)
    x[0].fill_(-1)
    col = x[:, 2]
    col += 100
    return x.sum(), v.shape, x.is_contiguous()


def forward_all(*args, **kwargs):
    return sum(a.sum() for a in args) + sum(kwargs.values())


def main():
    m = Stateful()
    x = torch.randn(4, 3)
    for i in range(3):
        y, info = m(x, torch.ones(3) * i, bias=0.1 * i, clamp=(i == 2))
        print("call", i, [round(v, 4) for v in y.sum(0).tolist()], info["steps"], round(info["norm"].item(), 4))
    print("state", m.steps, m.history, m.config["names"], [round(v, 4) for v in m.seen.tolist()])
    print("wrapper calls", Stateful.forward.calls)
    t = torch.arange(12.0).reshape(4, 3)
    s, shape, contiguous = views_in_place(t)
    print("views", s.item(), tuple(shape), contiguous, t.tolist())
    print("forwarding", forward_all(torch.ones(2), torch.ones(3), a=1, b=2.5).item())


main()
