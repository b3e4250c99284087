"""The workloads of scripts/bench and the goals the issues set for them
(issue 12 "Speed": the llvm backend; issue 9 "Speed": AOT and aot_eager).

A workload builds a function and its inputs; every contender runs that
same function on those same tensors. `mode` says how a call runs:
"infer" under torch.no_grad(), "plain" as is, "train" as a training step
(gradients cleared, forward + loss, backward). `bytes_moved` is the least
memory traffic of a call (each input read once, each output written once)
for the memory-bound ones, compared with a measured copy_.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

MiB = 1 << 20


class Goal:
    """A goal of an issue: `what` is "ratio" (eager / backend), "copy"
    (time / copy bound), "cold_ms" or "cached_ms" (compile latency)."""

    def __init__(self, backend, what, op, value, issue):
        self.backend, self.what, self.op, self.value, self.issue = backend, what, op, value, issue

    def text(self):
        unit = {"ratio": "x", "copy": "x copy", "cold_ms": " ms cold", "cached_ms": " ms cached"}[self.what]
        return f"{self.op}{self.value:g}{unit}"

    def met(self, got):
        if got is None:
            return None
        return {">=": got >= self.value, ">": got > self.value, "<": got < self.value, "<=": got <= self.value}[self.op]


class Workload:
    def __init__(self, key, title, make, mode="plain", goals=(), bytes_moved=None, twins=True, core=False):
        self.key, self.title, self.make, self.mode = key, title, make, mode
        self.goals = list(goals)
        self.bytes_moved = bytes_moved  # f(args) -> bytes, or None when not memory-bound
        self.twins = twins              # also run the identical contenders of the self-check
        self.core = core                # part of --self-check-only


def _bytes(*tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


# ----------------------------------------------------------- functions

def pointwise8(x, y):
    a = x * y + 1.0
    b = a.sin() * x
    c = b - y / 2.0
    d = c.relu() + a
    return d * d - b


def transcendental_chain(x, y):
    a = x.sin() * y
    b = a.cos() + x
    c = b.exp() * 0.5
    d = c.tanh() - y
    return d * a + 1.0


def softmax(x):
    return torch.softmax(x, dim=-1)


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def tiny30(a, b, c, d):
    x = a + b
    x = x * c
    x = x - d
    x = x.sin()
    x = x + a
    x = x * 2.0
    x = x.cos()
    x = x - b
    x = x.exp()
    x = x * c
    x = x + 1.0
    x = x.tanh()
    x = x - d
    x = x * a
    x = x.relu()
    x = x + b
    x = x.sigmoid()
    x = x * 3.0
    x = x - c
    x = x + d
    x = x.abs()
    x = x * 0.5
    x = x + a
    x = x.neg()
    x = x * b
    x = x.sin()
    x = x - c
    x = x * d
    x = x.sigmoid()
    return x + 1.0


# The models of the e2e training tests (tests/e2e/models.py; copied because
# importing that file runs its checks).
class E2eMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(8, 32), nn.Linear(32, 32), nn.Linear(32, 4)
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = self.drop(torch.tanh(self.fc2(x)))
        return self.fc3(x)


class E2eCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(self.features(x))
        return self.head(torch.flatten(x, 1))


def _module_fn(model):
    def forward(x):
        return model(x)
    return forward


def _loss_fn(model):
    def loss(x, target):
        return F.cross_entropy(model(x), target)
    return loss


# -------------------------------------------------------------- makers
# Each returns (fn, args, params): params are what a training step clears.

def make_pointwise8():
    return pointwise8, (torch.randn(1 << 22), torch.randn(1 << 22)), ()


def make_chain():
    return transcendental_chain, (torch.randn(1 << 22), torch.randn(1 << 22)), ()


def make_softmax():
    return softmax, (torch.randn(4096, 1024),), ()


def make_layer_norm():
    return layer_norm, (torch.randn(4096, 1024), torch.randn(1024), torch.randn(1024)), ()


def make_mlp():
    model = nn.Sequential(*[m for _ in range(3) for m in (nn.Linear(512, 512), nn.GELU())]).eval()
    return _module_fn(model), (torch.randn(64, 512),), ()


def make_tiny30():
    return tiny30, tuple(torch.randn(16) for _ in range(4)), ()


def make_resnet18():
    import torchvision  # ImportError: the caller prints why it is skipped
    model = torchvision.models.resnet18(weights=None).eval()
    return _module_fn(model), (torch.randn(8, 3, 224, 224),), ()


def make_train(model_cls, xshape, classes):
    def make():
        model = model_cls().train()
        args = (torch.randn(*xshape), torch.randint(0, classes, (xshape[0],)))
        return _loss_fn(model), args, tuple(model.parameters())
    return make


def make_adam_step():
    """optimizer.step() of Adam over a 2-layer MLP's parameters (512x512),
    its state made by one eager step first."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512))
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    model(torch.randn(16, 512)).sum().backward()
    opt.step()

    def adam_step():
        opt.step()
    return adam_step, (), ()


def _in_out(args, out_like=0):
    """Bytes of every input plus one output shaped like input `out_like`."""
    return _bytes(*args) + _bytes(args[out_like])


def workloads():
    L = "llvm"
    return [
        Workload("pointwise8", "8 cheap pointwise ops on 2^22 float32", make_pointwise8, core=True,
                 bytes_moved=_in_out,
                 goals=[Goal(L, "ratio", ">=", 4, 12), Goal(L, "copy", "<=", 1.5, 12),
                        Goal(L, "cold_ms", "<", 30, 12), Goal(L, "cached_ms", "<", 3, 12)]),
        Workload("chain", "sin/cos/exp/tanh chain (9 ops) on 2^22 float32", make_chain,
                 bytes_moved=_in_out, goals=[Goal(L, "ratio", ">=", 3, 12)]),
        Workload("softmax", "softmax over (4096, 1024)", make_softmax,
                 bytes_moved=_in_out, goals=[Goal(L, "ratio", ">=", 2, 12)]),
        Workload("layer_norm", "layer norm over (4096, 1024)", make_layer_norm,
                 bytes_moved=_in_out, goals=[Goal(L, "ratio", ">=", 2, 12)]),
        Workload("mlp", "MLP inference, 3x (Linear 512->512 + GELU), batch 64", make_mlp, mode="infer",
                 goals=[Goal(L, "ratio", ">=", 1.2, 12)]),
        Workload("tiny30", "30 tiny ops on 16-element tensors", make_tiny30, core=True,
                 goals=[Goal(L, "ratio", ">=", 5, 12)]),
        Workload("resnet18", "torchvision resnet18 inference, batch 8", make_resnet18, mode="infer", twins=False,
                 goals=[Goal(L, "ratio", ">", 1, 12)]),
        Workload("train_mlp", "training step of the e2e MLP (8-32-32-4, batch 64)",
                 make_train(E2eMLP, (64, 8), 4), mode="train", core=True,
                 goals=[Goal("aot_eager", "ratio", ">=", 1, 9), Goal(L, "ratio", ">", 1, 12)]),
        Workload("adam_step", "torch.optim.Adam step over 2x Linear(512, 512)", make_adam_step),
        Workload("train_cnn", "training step of the e2e CNN (conv/bn x2, batch 16, 3x32x32)",
                 make_train(E2eCNN, (16, 3, 32, 32), 10), mode="train"),
    ]
