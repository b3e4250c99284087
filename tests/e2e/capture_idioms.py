"""Issue 42: idioms of real model code that used to break the graph, each
traced into one graph with eager's values: torch.tensor / as_tensor of
Python data (constants and traced numbers), numpy scalars and numpy math on
constants, losses with `reduction=` (torch.nn._reduction inlined), devices
given as strings, Tensor.type(dtype), and F.linear with keyword arguments."""
import numpy as np
import torch
import torch.nn.functional as F

import tracejit
from capture_util import expect
from e2e_util import BACKEND, check, check_equal, finish

x = torch.randn(4, 8)
target = torch.randint(0, 8, (4,))
W, b = torch.randn(3, 8), torch.randn(3)

# torch.tensor / as_tensor of Python data
expect("torch.tensor of a list of floats", lambda t: t * torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]), (x,))
expect("torch.tensor of nested lists", lambda t: t[:2, :2] @ torch.tensor([[1.0, 2.0], [3.0, 4.0]]), (x,))
expect("torch.tensor of ints infers int64", lambda t: torch.tensor([1, 2, 3]) + t.shape[0], (x,))
expect("torch.tensor of bools infers bool", lambda t: torch.tensor([True, False, True, True]) & (t[:, 0] > 0), (x,))
expect("torch.tensor of ints and bools infers int64", lambda t: torch.tensor([True, 2]), (x,))
expect("torch.tensor with dtype=", lambda t: t + torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8]], dtype=torch.float32), (x,))
expect("torch.tensor with a device string", lambda t: t + torch.tensor([0.5], device="cpu"), (x,))
expect("torch.tensor of a size", lambda t: t / torch.tensor([t.shape[0], t.shape[1]]).float().sum(), (x,))
expect("torch.as_tensor of a tuple", lambda t: t * torch.as_tensor((2.0,)), (x,))
expect("torch.as_tensor of a tensor is the tensor (no op)", lambda t: torch.as_tensor(t) is t, (x,), graphs=0)
expect("torch.as_tensor of a tensor with a dtype", lambda t: torch.as_tensor(t, dtype=torch.float64), (x,))


def fresh_constant(t):
    c = torch.tensor([1.0, 2.0])  # a new tensor per call: writing it changes nothing else
    c.mul_(t.sum())
    return c


expect("torch.tensor is fresh on every call", fresh_constant, (x,))
compiled_fresh = tracejit.compile(fresh_constant, backend=BACKEND)
check(all(torch.allclose(compiled_fresh(x), fresh_constant(x)) for _ in range(2)),
      "torch.tensor: a write on one call is not seen by the next")


def ragged(t):
    try:
        return t + torch.tensor([[1.0], [2.0, 3.0]])
    except ValueError as e:
        return str(e)


check_equal(tracejit.compile(ragged, backend=BACKEND)(x), ragged(x), "ragged torch.tensor data raises as in eager")

# numpy scalars and numpy math on constants
expect("numpy ufunc on a constant", lambda t: t / np.sqrt(64), (x,))
expect("numpy scalar types", lambda t: t * np.float32(0.5) + np.int64(2), (x,))
expect("numpy scalar argument", lambda t, s: t * s, (x, np.float64(0.25)))
expect("numpy float32 scalar argument", lambda t, s: torch.clamp(t, max=s), (x, np.float32(0.5)))

# losses with reduction= (torch.nn._reduction.get_enum)
expect("nll_loss(reduction='sum')", lambda t: F.nll_loss(F.log_softmax(t, -1), target, reduction="sum"), (x,))
expect("l1_loss(reduction='mean')", lambda t: F.l1_loss(t, t * 2, reduction="mean"), (x,))
expect("mse_loss(reduction='none')", lambda t: F.mse_loss(t, t.flip(0), reduction="none"), (x,))
expect("binary_cross_entropy", lambda t: F.binary_cross_entropy(t.sigmoid(), (t > 0).float()), (x,))
expect("cross_entropy(reduction='sum')", lambda t: F.cross_entropy(t, target, reduction="sum"), (x,))

# devices as strings, Tensor.type(dtype)
expect("torch.zeros(device='cpu')", lambda t: t + torch.zeros(4, 8, device="cpu"), (x,))
expect("torch.arange(device='cpu')", lambda t: t + torch.arange(8, device="cpu"), (x,))
expect("torch.full(device='cpu')", lambda t: t + torch.full((4, 8), 2.0, device="cpu"), (x,))
expect("zeros_like(device='cpu')", lambda t: t + torch.zeros_like(t, device="cpu"), (x,))
expect("Tensor.to('cpu')", lambda t: t.to("cpu") + 1, (x,))
expect("Tensor.to('cpu', torch.float64)", lambda t: t.to("cpu", torch.float64) + 1, (x,))
expect("Tensor.type(torch.float64)", lambda t: t.type(torch.float64) + 1, (x,))
expect("Tensor.type(its own dtype) is itself (no op)", lambda t: t.type(torch.float32) is t, (x,), graphs=0)

# F.linear with keyword arguments (ATen's argument is named `input`)
expect("F.linear(input=, weight=, bias=)", lambda t: F.linear(input=t, weight=W, bias=b), (x,))
expect("F.layer_norm(input=)", lambda t: F.layer_norm(input=t, normalized_shape=(8,)), (x,))

# indexing with a list of ints; F.interpolate with scale_factor (ints for ATen's float[])
expect("x[[0, 2]]", lambda t: t[[0, 2]] * 2, (x,))
expect("x[:, [[0], [1]]]", lambda t: t[:, [[0], [1]]] + 1, (x,))
expect("x[[0, -1], 1:3]", lambda t: t[[0, -1], 1:3], (x,))
expect("F.interpolate(scale_factor=2)", lambda t: F.interpolate(t.view(1, 1, 4, 8), scale_factor=2), (x,))
expect("F.interpolate(scale_factor=2.0, bilinear)",
       lambda t: F.interpolate(t.view(1, 1, 4, 8), scale_factor=2.0, mode="bilinear", align_corners=False), (x,))


# nn.ParameterList / ParameterDict: iterated, enumerated, indexed
class ParameterContainers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(8)) for _ in range(3)])
        self.named = torch.nn.ParameterDict({"shift": torch.nn.Parameter(torch.randn(8))})

    def forward(self, t):
        for i, p in enumerate(self.scales):
            t = t + p * i
        t = t * sum(p.sum() for p in self.scales) + self.scales[-1]
        return t + self.named["shift"] + len(self.scales)


containers = ParameterContainers()
expect("ParameterList/ParameterDict", containers, (x,))
compiled_containers = tracejit.compile(containers, backend=BACKEND)
compiled_containers(x)
with torch.no_grad():
    containers.scales[1].add_(1.0)
    containers.named["shift"].mul_(2.0)
check(torch.allclose(compiled_containers(x), containers(x)), "ParameterList/ParameterDict: later values are read")


# clip_grad_norm_ over model.parameters() (a generator passed to an inlined function)
def model_with_grads():
    torch.manual_seed(3)
    m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    m(torch.randn(4, 8)).sum().backward()
    return (m,)


def clip(m):
    total = torch.nn.utils.clip_grad_norm_(m.parameters(), 0.1)
    return total, [p.grad.clone() for p in m.parameters()]


expect("clip_grad_norm_(model.parameters())", clip, None, make_args=model_with_grads)

finish()
