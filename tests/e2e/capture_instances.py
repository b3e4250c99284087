"""Issue 42: instances of one nn.Module class share one compile. Modules are
guarded by MODULE_MATCH (their class, how each name the trace read
resolves, no hooks), not by identity, and their parameters and buffers are
graph inputs guarded by shape/dtype/strides/requires_grad: the 10th
instance of a class (the many_instances trial) is a cache hit, not a
cache_size_limit fallback. Never wrong: whatever the graph baked in that
differs for another instance retraces (a submodule of another class, a
method shadowed in the instance's __dict__, a hook, a config attribute,
two submodules that are one object, a member moved to another table).
Each case compares against eager on the same instances."""
import warnings

import torch
import torch.nn as nn

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

torch.manual_seed(0)
x = torch.randn(4, 8)


class MLP(nn.Module):
    def __init__(self, n=8):
        super().__init__()
        self.a = nn.Linear(n, n)
        self.b = nn.Linear(n, n)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


# ---- the many_instances trial: 10 instances, 3 calls each, one compile
tracejit.reset()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for i in range(10):
        m = MLP()
        cm = tracejit.compile(m, backend=BACKEND)
        for _ in range(3):
            got = cm(x)
        check(torch.allclose(got, m(x), atol=1e-6), f"instance {i}: its own weights' result")
c = tracejit.counters()
check_equal(c["graphs_compiled"], 1, "10 instances of one class: one graph compiled")
check_equal(c["frames_traced"], 1, "10 instances of one class: one frame traced")
check(not any("cache_size_limit" in str(w.message) for w in caught), "10 instances: no cache_size_limit warning")


# ---- what differs between instances retraces, and each result is eager's
class Helper(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.act = nn.ReLU()
        self.scale = 2.0

    def helper(self, x):
        return x + 1

    def forward(self, x):
        return self.helper(self.act(self.a(x))) * self.scale


def run_all(models, what):
    tracejit.reset()
    fn = tracejit.compile(lambda m, x: m(x), backend=BACKEND)
    for i, m in enumerate(models):
        for _ in range(2):
            got = fn(m, x)
        want = m(x)
        check(torch.allclose(got, want, atol=1e-5), f"{what}: instance {i} as eager")
    return tracejit.counters()


base = [Helper() for _ in range(3)]
c = run_all(base, "same structure")
check_equal(c["frames_traced"], 1, "same structure: one trace for three instances")

other_act = Helper()
other_act.act = nn.Tanh()  # a submodule of another class
shadowed = Helper()
shadowed.helper = lambda x: x * 100  # a method shadowed in the instance's __dict__
scaled = Helper()
scaled.scale = 5.0  # a plain attribute
hooked = Helper()
hooked.register_forward_hook(lambda mod, inp, out: out * -1)
slope = Helper()
slope.act = nn.LeakyReLU(0.3)
slope2 = Helper()
slope2.act = nn.LeakyReLU(0.7)  # a submodule's config attribute
no_grad_param = Helper()
no_grad_param.a.weight.requires_grad_(False)
bigger = Helper()
bigger.a = nn.Linear(8, 8, bias=False)  # bias None: a member of another kind
c = run_all([base[0], other_act, shadowed, scaled, hooked, slope, slope2, no_grad_param, bigger, base[1]],
            "differing instances")
check(c["frames_traced"] >= 8, f"differing instances retrace ({c['frames_traced']} traces)")


# ---- identity the trace compared: two submodules that are one object
class Tied(nn.Module):
    def __init__(self, tie):
        super().__init__()
        self.enc = nn.Linear(8, 8)
        self.dec = self.enc if tie else nn.Linear(8, 8)

    def forward(self, x):
        if self.enc is self.dec:
            return self.enc(x) * 10
        return self.dec(self.enc(x))


c = run_all([Tied(False), Tied(True), Tied(False), Tied(True)], "`is` between submodules")
check_equal(c["frames_traced"], 2, "`is` between submodules: one trace per answer")


# ---- model.parameters() dedups shared modules by identity (a keyed set)
class Shared(nn.Module):
    def __init__(self, share):
        super().__init__()
        self.l1 = nn.Linear(8, 8)
        self.l2 = self.l1 if share else nn.Linear(8, 8)

    def forward(self, x):
        n = 0
        for p in self.parameters():
            n += p.numel()
        return self.l2(self.l1(x)) * n


c = run_all([Shared(False), Shared(True), Shared(False)], "parameters() over shared modules")


# ---- hasattr of a member that some instances have
class Maybe(nn.Module):
    def __init__(self, extra):
        super().__init__()
        self.a = nn.Linear(8, 8)
        if extra:
            self.register_buffer("extra", torch.ones(8) * 3)

    def forward(self, x):
        y = self.a(x)
        if hasattr(self, "extra"):
            y = y + self.extra
        return y


run_all([Maybe(False), Maybe(True), Maybe(False), Maybe(True)], "hasattr of a member")


# ---- a name found in another table for another instance (a buffer, not a parameter)
class Member(nn.Module):
    def __init__(self, as_buffer):
        super().__init__()
        if as_buffer:
            self.register_buffer("w", torch.full((8,), 2.0))
        else:
            self.w = nn.Parameter(torch.full((8,), 3.0))

    def forward(self, x):
        return x * self.w


run_all([Member(False), Member(True), Member(False)], "a member in another table")


# ---- train/eval: the training flag is read as a guarded constant
bn = [nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8)) for _ in range(2)]
bn[1].eval()
run_all([bn[0], bn[1], bn[0]], "train and eval instances")

finish()
