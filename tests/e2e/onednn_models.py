"""Convolutions and Linears end to end (issue 41 item 1; the llvm backend
runs them as oneDNN steps with their epilogues, jit/onednn_plan.h): small
models of every conv kind give eager's values; a write to a weight between
calls (in place, load_state_dict, an optimizer step) gives the new result,
never a stale packed weight; shapes ATen rejects raise ATen's error; and
TRACEJIT_ONEDNN=0 gives the same values (a second process)."""
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, check, check_raises, finish

torch.manual_seed(0)
LAUNCHER = os.path.join(os.environ.get("TRACEJIT_BUILD_ROOT", os.path.join(os.path.dirname(__file__), "..", "..", "build")),
                        "tracejit")


class Block(nn.Module):
    """A residual block: conv+bn+relu, conv+bn, + identity (or a 1x1 downsample), relu."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = nn.Conv2d(cin, cout, 1, stride) if stride != 1 or cin != cout else None

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (self.down(x) if self.down is not None else x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.block = Block(16, 24, 2)
        self.dw = nn.Conv2d(24, 24, 3, padding=2, dilation=2, groups=24)
        self.pw = nn.Conv2d(24, 32, 1)
        self.up = nn.ConvTranspose2d(32, 8, 4, stride=2, padding=1)
        self.head = nn.Linear(8 * 16 * 16, 40)

    def forward(self, x):
        x = F.silu(self.stem(x))
        x = self.block(x)
        x = F.hardswish(self.pw(self.dw(x)))
        x = torch.sigmoid(self.up(x))
        return F.gelu(self.head(x.flatten(1)))


class Seq(nn.Module):
    """1-d and 3-d convolutions, a transposed 1-d one, and an MLP with residuals."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(6, 12, 5, stride=2, padding=2)
        self.t1 = nn.ConvTranspose1d(12, 6, 3, stride=2, padding=1, output_padding=1)
        self.c3 = nn.Conv3d(2, 4, 3, padding=1)
        self.fc1 = nn.Linear(64, 256)
        self.fc2 = nn.Linear(256, 64)

    def forward(self, s, v, h):
        a = F.leaky_relu(self.c1(s), 0.1)
        a = torch.tanh(self.t1(a)) * 0.5
        b = F.elu(self.c3(v))
        m = h + self.fc2(F.relu(self.fc1(h)))
        return a, b, torch.clamp(m, -1.0, 1.0)


class NextBlock(nn.Module):
    """A ConvNeXt block: depthwise 7x7, LayerNorm over the channels last, Linear 4x wide + gelu, Linear back, scale,
    residual. At 2x96x48x48 its first Linear has 4608 rows of 96 features: a oneDNN step on every CPU (on an AVX2
    one only such tall, shallow Linears are, onednn_plan.h)."""

    def __init__(self, c=96):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c, eps=1e-6)
        self.fc1, self.fc2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(torch.rand(c) + 0.5)

    def forward(self, x):
        y = self.norm(self.dw(x).permute(0, 2, 3, 1))
        y = self.gamma * self.fc2(F.gelu(self.fc1(y)))
        return x + y.permute(0, 3, 1, 2)


def linear_steps(fn, *args):
    """How many oneDNN Linear steps one call of `fn` runs (torch.profiler's tj:: events)."""
    from torch.profiler import profile
    with profile() as prof:
        fn(*args)
    return sum(e.name == "tj::onednn linear step" for e in prof.events())


def close(a, b):
    if isinstance(a, (tuple, list)):
        return all(close(x, y) for x, y in zip(a, b))
    return a.shape == b.shape and a.stride() == b.stride() and torch.allclose(a, b, rtol=1e-4, atol=1e-4)


def main():
    net = Net().eval()
    x = torch.randn(4, 3, 16, 16)
    with torch.no_grad():
        want = net(x)
        cnet = tracejit.compile(net)
        check(close(cnet(x), want), "a CNN (residual block, depthwise dilated, 1x1, transposed, Linear) gives eager's values")
        check(close(cnet(x), want), "... and again (packed weights reused)")
        xc = x.contiguous(memory_format=torch.channels_last)
        check(close(cnet(xc), net(xc)), "a channels-last input gives eager's values and strides")

    # a resnet stem: conv+bn+relu, max pooling (a oneDNN pooling step), a residual block, a 2x2 pooling
    stem = nn.Sequential(nn.Conv2d(3, 16, 7, 2, 3, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
                         nn.MaxPool2d(3, 2, 1), Block(16, 16, 1), nn.MaxPool2d(2)).eval()
    xs = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        cstem = tracejit.compile(stem)
        check(close(cstem(xs), stem(xs)), "a resnet stem with max pooling gives eager's values and strides")
        check(close(cstem(xs), stem(xs)), "... and again")

    seq = Seq().eval()
    s, v, h = torch.randn(3, 6, 20), torch.randn(2, 2, 5, 6, 7), torch.randn(32, 64)
    with torch.no_grad():
        cseq = tracejit.compile(seq)
        check(close(cseq(s, v, h), seq(s, v, h)), "1-d, transposed 1-d and 3-d convolutions and an MLP with residuals")

    block = NextBlock().eval()
    xb = torch.randn(2, 96, 48, 48)
    with torch.no_grad():
        cblock = tracejit.compile(block)
        check(close(cblock(xb), block(xb)), "a ConvNeXt block (tall, shallow Linear + gelu) gives eager's values and strides")
        check(close(cblock(xb), block(xb)), "... and again")
        if BACKEND == "llvm" and os.environ.get("TRACEJIT_ONEDNN", "1") != "0":
            check(linear_steps(cblock, xb) >= 1, "... its 4608x96 Linear runs as a oneDNN step")

    # Writes to weights between calls give the new results.
    with torch.no_grad():
        net.stem.weight.mul_(-1.5)
        check(close(cnet(x), net(x)), "after an in-place write to a conv weight")
        net.head.weight.add_(0.01)
        check(close(cnet(x), net(x)), "after an in-place write to a Linear weight")
        # .detach() shares the memory and the version counter; .data shares only the memory (a content hash sees it)
        net.stem.weight.data.mul_(0.5)
        check(close(cnet(x), net(x)), "after a write through .data to a conv weight (version counter unchanged)")
        net.stem.weight.detach().mul_(0.5)
        check(close(cnet(x), net(x)), "after a write through .detach() to a conv weight")
        net.head.weight.detach().sub_(0.02)
        check(close(cnet(x), net(x)), "after a write through .detach() to a Linear weight")
        # another model's weights, and batch-norm statistics that are not the defaults
        state = {k: (torch.rand_like(t) + 0.5 if k.endswith("running_var") else
                     torch.randn_like(t) * 0.1 if k.endswith("running_mean") else t)
                 for k, t in Net().state_dict().items()}
        net.load_state_dict(state)
        check(close(cnet(x), net(x)), "after load_state_dict")
        seq.fc1.weight.zero_()
        check(close(cseq(s, v, h), seq(s, v, h)), "after zero_() on a Linear weight")

    # Training: the optimizer writes the weights every step; forward values and grads follow eager.
    torch.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.Flatten(),
                          nn.Linear(8 * 8 * 8, 10))
    ref = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.Flatten(),
                        nn.Linear(8 * 8 * 8, 10))
    ref.load_state_dict(model.state_dict())
    opt, ref_opt = torch.optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(ref.parameters(), lr=0.1)
    cmodel = tracejit.compile(model)
    data, target = torch.randn(16, 3, 8, 8), torch.randint(0, 10, (16,))
    ok = True
    for step in range(3):
        for m, o, fn in ((model, opt, cmodel), (ref, ref_opt, ref)):
            o.zero_grad()
            loss = F.cross_entropy(fn(data), target)
            loss.backward()
            o.step()
        ok = ok and all(torch.allclose(a, b, rtol=1e-3, atol=1e-4) for a, b in zip(model.parameters(), ref.parameters()))
    check(ok, "three SGD steps of a conv net: the parameters follow eager's")
    with torch.no_grad():
        check(close(cmodel(data), ref(data)), "inference after the steps uses the updated weights")

    # Shapes ATen rejects raise ATen's error.
    bad = nn.Conv2d(4, 8, 3)


    def run_bad(t):
        with torch.no_grad():
            return tracejit.compile(bad)(t)


    try:
        bad(torch.randn(1, 3, 8, 8))
        eager_error = None
    except RuntimeError as e:
        eager_error = str(e)
    err = check_raises(RuntimeError, lambda: run_bad(torch.randn(1, 3, 8, 8)), "a channel mismatch raises")
    check(err is not None and eager_error is not None and str(err) == eager_error, "... ATen's error, word for word")

    # TRACEJIT_ONEDNN=0: the same values from another process.
    if os.path.exists(LAUNCHER):
        with tempfile.TemporaryDirectory() as d:
            torch.save({"net": Net().state_dict(), "x": x, "block": block.state_dict(), "xb": xb},
                       os.path.join(d, "in.pt"))
            code = ("import torch, tracejit, sys; sys.path.insert(0, %r); import os\n"
                        "from onednn_models import Net, NextBlock\n"
                    "d = torch.load(%r); n = Net().eval(); n.load_state_dict(d['net'])\n"
                    "b = NextBlock().eval(); b.load_state_dict(d['block'])\n"
                    "with torch.no_grad(): torch.save((tracejit.compile(n)(d['x']), tracejit.compile(b)(d['xb'])), %r)\n"
                    % (os.path.dirname(os.path.abspath(__file__)), os.path.join(d, "in.pt"), "@OUT@"))
            outs = []
            for flag in ("1", "0"):
                out = os.path.join(d, f"out{flag}.pt")
                env = dict(os.environ, TRACEJIT_ONEDNN=flag)
                r = subprocess.run([LAUNCHER, "-c", code.replace("@OUT@", out)], env=env, capture_output=True, text=True)
                check(r.returncode == 0, f"TRACEJIT_ONEDNN={flag} child ran: {r.stderr[-2000:]}")
                outs.append(torch.load(out) if r.returncode == 0 else None)
            check(outs[0] is not None and outs[1] is not None and close(outs[0], outs[1]),
                  "TRACEJIT_ONEDNN=0 gives the values of the oneDNN path")

    finish()


if __name__ == "__main__":
    main()
