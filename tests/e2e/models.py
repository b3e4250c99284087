"""nn.Module tracing (issue "Inlining, closures, side effects and nn.Module
tracing"): each model compiles to one graph, matches eager in eval and
train mode, and stays correct after an in-place parameter change and a
swapped submodule (guard -> recompile)."""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, check, check_equal, finish


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(8, 32), nn.Linear(32, 32), nn.Linear(32, 4)
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = self.drop(torch.tanh(self.fc2(x)))
        return self.fc3(x)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(self.features(x))
        return self.head(torch.flatten(x, 1))


class Block(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.drop = nn.Dropout(0.1)

    def attention(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = [t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v)]
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = self.drop(att.softmax(dim=-1))
        return (att @ v).transpose(1, 2).contiguous().view(B, T, C)

    def forward(self, x):
        x = x + self.drop(self.proj(self.attention(self.ln1(x))))
        return x + self.mlp(self.ln2(x))


class WithGetattr(nn.Module):
    """A custom __getattr__ that serves config values from a dict."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)
        self.settings = {"scale": 0.5, "shift": 1.0}

    def __getattr__(self, name):
        settings = self.__dict__.get("settings", {})
        if name in settings:
            return settings[name]
        return super().__getattr__(name)

    def forward(self, x):
        return self.lin(x) * self.scale + self.shift


class Configured(nn.Module):
    """Python config values steer the trace (specialized, guarded)."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(5, 5) for _ in range(3)])
        self.use_residual = True
        self.act = "gelu"
        self.eps = 1e-3

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            y = layer(x)
            y = F.gelu(y) if self.act == "gelu" else F.relu(y)
            x = x + y if self.use_residual and i > 0 else y
        return x / (x.norm(dim=-1, keepdim=True) + self.eps)


class Recorder(nn.Module):
    """Appends to a list attribute during forward (a replayed side effect)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.seen = []

    def forward(self, x):
        y = self.lin(x).sigmoid()
        self.seen.append(y.mean())
        return y * 2


def same(a, b, tol=1e-5):
    return a.shape == b.shape and torch.allclose(a, b, atol=tol, rtol=tol)


def check_model(name, make, make_input, train_modes=("eval", "train")):
    torch.manual_seed(0)
    model = make()
    ref = copy.deepcopy(model)
    x = make_input()
    for mode in train_modes:
        getattr(model, mode)()
        getattr(ref, mode)()
        tracejit.reset()
        torch.manual_seed(1)
        ex = tracejit.explain(model)(x)
        check_equal((ex.graph_count, ex.graph_break_count), (1, 0),
                    f"{name} ({mode}): one graph, no break {[str(r) for r in ex.break_reasons]}")
        model.load_state_dict(ref.state_dict())
        if hasattr(model, "seen"):
            model.seen.clear()
            ref.seen.clear()
        compiled = tracejit.compile(model, backend=BACKEND)
        for call in range(2):
            torch.manual_seed(10 + call)
            got = compiled(x)
            torch.manual_seed(10 + call)
            want = ref(x)
            check(same(got, want), f"{name} ({mode}): call {call} matches eager")
        if hasattr(model, "seen"):
            check_equal(len(model.seen), len(ref.seen), f"{name} ({mode}): the list attribute grew as in eager")
            check(all(torch.allclose(a, b) for a, b in zip(model.seen, ref.seen)), f"{name} ({mode}): same items appended")
        for (k, v), (k2, v2) in zip(model.state_dict().items(), ref.state_dict().items()):
            if not torch.allclose(v.float(), v2.float(), atol=1e-5):
                check(False, f"{name} ({mode}): state {k} (running stats) matches eager")
                break
        else:
            check(True, f"{name} ({mode}): parameters and buffers match eager")
    model.eval()
    ref.eval()
    compiled = tracejit.compile(model, backend=BACKEND)
    compiled(x)
    # An in-place parameter change: same tensors, new values, no recompile needed.
    p = next(model.parameters())
    with torch.no_grad():
        p.add_(0.25)
        next(ref.parameters()).add_(0.25)
    check(same(compiled(x), ref(x)), f"{name}: correct after an in-place parameter change")
    return model, ref, compiled, x


# Each model: one graph, eager results in eval and train mode.
check_model("3-layer MLP", MLP, lambda: torch.randn(5, 8))
check_model("small CNN", SmallCNN, lambda: torch.randn(2, 3, 8, 8))
check_model("transformer block", Block, lambda: torch.randn(2, 6, 16))
check_model("custom __getattr__", WithGetattr, lambda: torch.randn(3, 6))
check_model("Python config values", Configured, lambda: torch.randn(4, 5))
check_model("list attribute appended in forward", Recorder, lambda: torch.randn(3, 4))

class Containers(nn.Module):
    """Sequential/ModuleList/ModuleDict: indexing, slicing, iteration, len."""

    def __init__(self):
        super().__init__()
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.Tanh())
        self.ml = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.md = nn.ModuleDict({"a": nn.Linear(4, 4), "b": nn.Sigmoid()})

    def forward(self, x):
        x = self.seq[1:](self.seq[0](x))
        for m in self.ml[::2]:
            x = m(x)
        x = self.ml[-1](x) + len(self.ml)
        for k in self.md:
            x = self.md[k](x)
        return x


check_model("module containers", Containers, lambda: torch.randn(2, 4))


class ScaledLinear(nn.Linear):
    """A subclass of a built-in module calling super().forward."""

    def __init__(self, *args, scale=2.0):
        super().__init__(*args)
        self.scale = scale

    def forward(self, x):
        return super().forward(x) * self.scale


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = ScaledLinear(4, 4)

    def forward(self, x):
        return self.lin(x).relu()


class Child(Base):
    def forward(self, x):
        return super(Child, self).forward(x) + 1


check_model("super() in forward", Child, lambda: torch.randn(2, 4))

# The built-in modules trace to ATen ops: one graph each, eager results.
builtin_modules = [
    (nn.Linear(5, 3), (2, 5)), (nn.Conv1d(3, 4, 3), (2, 3, 7)), (nn.Conv2d(3, 4, 3, stride=2), (1, 3, 9, 9)),
    (nn.ReLU(), (2, 5)), (nn.GELU(), (2, 5)), (nn.SiLU(), (2, 5)), (nn.Tanh(), (2, 5)), (nn.Sigmoid(), (2, 5)),
    (nn.LayerNorm(5), (2, 5)), (nn.BatchNorm1d(3), (4, 3, 5)), (nn.BatchNorm2d(3), (2, 3, 4, 4)),
    (nn.Dropout(0.3), (4, 5)), (nn.Softmax(dim=-1), (2, 5)), (nn.Flatten(), (2, 3, 4)),
]
for module, shape in builtin_modules:
    for mode in ("eval", "train"):
        getattr(module, mode)()
        x = torch.randn(*shape)
        ref = copy.deepcopy(module)
        torch.manual_seed(3)
        got = tracejit.compile(module, backend=BACKEND)(x)
        torch.manual_seed(3)
        want = ref(x)
        ex = tracejit.explain(copy.deepcopy(module))(x)
        graphs = 0 if isinstance(module, nn.Dropout) and mode == "eval" else 1  # eval dropout: the identity, no graph
        check(same(got, want) and ex.graph_count == graphs and ex.graph_break_count == 0,
              f"{type(module).__name__} ({mode}): {graphs} graph(s), eager's result")
emb = nn.Embedding(10, 4)
idx = torch.tensor([[1, 2], [3, 9]])
check(same(tracejit.compile(emb, backend=BACKEND)(idx), emb(idx)) and tracejit.explain(emb)(idx).graph_count == 1,
      "Embedding: one graph, eager's result")
mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()
q, k = torch.randn(2, 3, 8), torch.randn(2, 3, 8)
for args in [(q, q, q), (q, k, k)]:
    ex = tracejit.explain(mha)(*args)
    got = tracejit.compile(mha, backend=BACKEND)(*args)
    check(same(got[0], mha(*args)[0]) and (ex.graph_count, ex.graph_break_count) == (1, 0),
          f"MultiheadAttention ({'self' if args[1] is q else 'cross'}-attention): one graph, eager's result")

# Swapping a submodule: modules are guarded by MODULE_MATCH (their class
# and members), not identity (issue 42): another Linear of the same shapes
# reuses the compile with its own weights; a submodule of another class
# recompiles once.
torch.manual_seed(0)
model = MLP().eval()
compiled = tracejit.compile(model, backend=BACKEND)
x = torch.randn(5, 8)
tracejit.reset()
compiled(x)
before = tracejit.counters()["recompiles"]
model.fc2 = nn.Linear(32, 32)
check(same(compiled(x), model(x)), "MLP: correct after swapping a submodule")
check_equal(tracejit.counters()["recompiles"] - before, 0, "swapping a submodule for a like one reuses the compile")
model.fc2 = nn.Sequential(nn.Linear(32, 32))
check(same(compiled(x), model(x)), "MLP: correct after swapping a submodule for another class")
check_equal(tracejit.counters()["recompiles"] - before, 1, "swapping a submodule for another class recompiles once")

# Changing a Python config value recompiles too.
torch.manual_seed(0)
cfg = Configured().eval()
compiled = tracejit.compile(cfg, backend=BACKEND)
x = torch.randn(4, 5)
compiled(x)
cfg.act = "relu"
check(same(compiled(x), cfg(x)), "config change: result follows the new value")

# The compiled module exposes the original's parameters, train/eval, state_dict.
torch.manual_seed(0)
net = SmallCNN()
cnet = tracejit.compile(net, backend=BACKEND)
check_equal([id(p) for p in cnet.parameters()], [id(p) for p in net.parameters()], "compiled module shares parameters")
cnet.eval()
check(not net.training and not net.features[1].training, "eval() reaches the original and its submodules")
check_equal(list(cnet.state_dict()), list(net.state_dict()), "state_dict keys are the original's")

finish()
