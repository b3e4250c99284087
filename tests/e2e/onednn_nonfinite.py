"""NaN, +inf and -inf through every oneDNN epilogue and the max pooling
(issue 39's never-wrong rule on issue 41's oneDNN steps, jit/onednn_finite.h):
a convolution (depthwise 1x1: each output reads one input; 3x3 stride 1:
Winograd's shape; 3x3 stride 2: direct; with a residual) or a Linear followed
by each activation the llvm backend fuses as a post-op, a max pooling, and a
chain of 30 convolutions with a relu each (whose carried worst-case bounds
pass the rule's limit while the values stay small: proved by a scan),
compiled against eager with inputs holding NaN, +inf and -inf, and with
finite inputs large enough that the sums overflow. NaN, +inf and -inf must
be where eager has them; the finite values within rounding. On the llvm
backend a child process also checks that finite inputs do run the fused
oneDNN steps (a refusal for every input would pass the first part), and
tracejit.counters()' `onednn_not_finite_refusals` counts the steps the
NaN rule refused: none for finite inputs, some for poisoned ones (the
models compile with the default backend, llvm, whatever BACKEND is)."""
import os
import subprocess
import sys

# Winograd from the first call (else a convolution's first calls run direct: onednn_winograd.h), so that its
# NaN/inf handling is what the Winograd-shaped cases check; read when the first convolution runs
os.environ.setdefault("TRACEJIT_WINOGRAD_AFTER", "0")
os.environ.setdefault("TRACEJIT_ONEDNN_LINEAR", "1")  # the Linear steps on every CPU (onednn_plan.h)

import torch
import torch.nn as nn
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, check, finish

LAUNCHER = os.path.join(os.environ.get("TRACEJIT_BUILD_ROOT", os.path.join(os.path.dirname(__file__), "..", "..", "build")),
                        "tracejit")

ACTS = {
    "none": lambda y: y,
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda y: F.gelu(y, approximate="tanh"),
    "silu": F.silu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "leaky_relu": lambda y: F.leaky_relu(y, 0.1),
    "leaky_relu_0": lambda y: F.leaky_relu(y, 0.0),
    "elu": F.elu,
    "clamp": lambda y: torch.clamp(y, -1.0, 2.0),
    "clamp_min": lambda y: torch.clamp(y, min=0.5),
    "hardtanh": F.hardtanh,
    "relu6": F.relu6,
    "scale": lambda y: y * 0.5,
    "scale_relu": lambda y: F.relu(y * 3.0),
}


class Convs(nn.Module):
    """One convolution of the kind per activation, each read by its activation only: one graph, a step each."""

    def __init__(self, kind, residual=False):
        super().__init__()
        self.residual = residual
        self.c = nn.ModuleList(
            nn.Conv2d(16, 16, 1, groups=16) if kind == "depthwise" else
            nn.Conv2d(16, 16, 3, padding=1) if kind == "3x3" else nn.Conv2d(16, 16, 3, stride=2, padding=1)
            for _ in ACTS)

    def forward(self, x):
        return tuple(act(c(x) + x if self.residual else c(x)) for c, act in zip(self.c, ACTS.values()))


class Lins(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.ModuleList(nn.Linear(256, 256) for _ in ACTS)

    def forward(self, x):
        return tuple(act(lin(x)) for lin, act in zip(self.l, ACTS.values()))


class Pool(nn.Module):
    def __init__(self, relu):
        super().__init__()
        self.relu, self.c = relu, nn.Conv2d(16, 16, 3, padding=1)

    def forward(self, x):
        y = self.c(x)
        return F.max_pool2d(F.relu(y) if self.relu else y, 3, 2, 1)


class Deep(nn.Module):
    """30 convolutions with a relu each, weights 3x PyTorch's default: each step's bound remembered for the next
    is its input's times its weight's gain (~18), so past the 24th the carried worst case passes the NaN rule's
    limit (1e30) while the values stay near 1e2: those steps must prove their operands by a scan, not refuse."""

    def __init__(self):
        super().__init__()
        self.c = nn.ModuleList(nn.Conv2d(16, 16, 3, padding=1) for _ in range(30))
        with torch.no_grad():
            for c in self.c:
                c.weight.mul_(3)

    def forward(self, x):
        for c in self.c:
            x = F.relu(c(x))
        return x


def poisoned(x, seed):
    """x with about 2 % of its elements each NaN, +inf and -inf."""
    g = torch.Generator().manual_seed(seed)
    x = x.clone()
    flat = x.view(-1)
    for v in (float("nan"), float("inf"), -float("inf")):
        flat[torch.randperm(flat.numel(), generator=g)[: max(1, flat.numel() // 50)]] = v
    return x


def same(want, got):
    """'' when NaN, +inf and -inf are where eager has them and the finite values agree; else what differs."""
    if want.shape != got.shape:
        return f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    for name, f in (("NaN", torch.isnan), ("+inf", torch.isposinf), ("-inf", torch.isneginf)):
        if not torch.equal(f(want), f(got)):
            return f"{name} at {int(f(got).sum())} places, eager's at {int(f(want).sum())}"
    fin = torch.isfinite(want)
    scale = float(want[fin].abs().max()) if fin.any() else 0.0  # the rounding error of a sum scales with its terms
    if not torch.allclose(want[fin], got[fin], rtol=1e-4, atol=1e-4 * max(1.0, scale)):
        return f"finite values differ by {float((want[fin] - got[fin]).abs().max()):g}"
    return ""


def models():
    """(name, module, input sizes, the name of each output) of every case."""
    acts = list(ACTS)
    out = [(f"conv {kind}", Convs(kind), (2, 16, 20, 20), acts) for kind in ("depthwise", "3x3", "stride2")]
    out.append(("conv 3x3 + residual", Convs("3x3", residual=True), (2, 16, 20, 20), acts))
    out.append(("linear", Lins(), (64, 256), acts))
    out.append(("conv + max pooling", Pool(False), (2, 16, 20, 20), [""]))
    out.append(("conv + relu + max pooling", Pool(True), (2, 16, 20, 20), [""]))
    out.append(("30 convs + relu", Deep(), (2, 16, 12, 12), [""]))
    return out


def run():
    torch.manual_seed(0)
    with torch.no_grad():
        for name, mod, size, outs in models():
            mod.eval()
            tracejit.reset()
            compiled = tracejit.compile(mod)
            x = torch.randn(size)
            # 3e37: sums of products overflow to +-inf (and inf - inf to NaN) in eager's convolution
            inputs = [("finite", x), ("NaN/+inf/-inf", poisoned(x, 1)), ("NaN/+inf/-inf again", poisoned(x, 2)),
                      ("overflowing sums", x * 3e37), ("finite after", x)]
            for what, inp in inputs:
                before = tracejit.counters()["onednn_not_finite_refusals"]
                want, got = mod(inp), compiled(inp)
                refusals = tracejit.counters()["onednn_not_finite_refusals"] - before
                if what in ("finite", "finite after"):
                    check(refusals == 0, f"{name}, {what} input: no step refused by the NaN rule (got {refusals})")
                elif what.startswith("NaN") and tracejit.config.backend == "llvm":
                    # every case has a relu/clamp/hardsigmoid post-op or a max pooling the NaN rule guards
                    check(refusals > 0, f"{name}, {what} input: the NaN rule's refusals are counted (got {refusals})")
                elif what.startswith("NaN"):  # eager, aot_eager: no oneDNN step to refuse
                    check(refusals == 0, f"{name}, {what} input: no oneDNN step on {tracejit.config.backend} (got {refusals})")
                if isinstance(want, torch.Tensor):
                    want, got = (want,), (got,)
                for act, w, g in zip(outs, want, got):
                    why = same(w, g)
                    check(not why, f"{name} + {act}, {what} input: {why or 'as eager'}")
    # a max pooling window of -inf only: ATen's result is -inf
    pool = Pool(False).eval()
    with torch.no_grad():
        pool.c.weight.zero_()
        pool.c.weight[:, :, 1, 1] = torch.eye(16)
        pool.c.bias.zero_()
        x = torch.randn(2, 16, 20, 20)
        x[:, :, :3, :3] = -float("inf")
        tracejit.reset()
        why = same(pool(x), tracejit.compile(pool)(x))
        check(not why, f"max pooling over a window of -inf: {why or 'as eager'}")


def child_steps():
    """The oneDNN steps a child process's llvm backend plans and runs for finite inputs."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = ("import sys; sys.path.insert(0, %r)\nimport torch, tracejit\nfrom onednn_nonfinite import models\n"
            "torch.manual_seed(0)\n"
            "with torch.no_grad():\n"
            "    for name, mod, size, outs in models():\n"
            "        tracejit.reset(); mod.eval(); tracejit.compile(mod)(torch.randn(size))\n" % here)
    env = dict(os.environ, TRACEJIT_LOGS="output_code,perf", TRACEJIT_BACKEND="llvm")
    r = subprocess.run([LAUNCHER, "-c", code], env=env, capture_output=True, text=True)
    check(r.returncode == 0, f"the child ran: {r.stderr[-2000:]}")
    return r.stderr.splitlines()


def main():
    run()
    if BACKEND == "llvm" and os.path.exists(LAUNCHER):
        lines = child_steps()
        steps = [line for line in lines if "oneDNN step" in line]
        refused = [line for line in lines if "oneDNN does not take" in line]
        for post in ("+relu", "+clamp", "+hardsigmoid", "+sum", "+gelu", "+tanh", "max_pool"):
            check(any(post in s for s in steps), f"a oneDNN step with {post} is planned")
        check(not refused, f"finite inputs run every oneDNN step: {refused[:3]}")
    finish()


if __name__ == "__main__":
    main()
