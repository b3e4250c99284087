"""A Linear on a 3-d input compiled whole (issue 41, the xfmr helper): eager's
`at::linear` of a contiguous [B, T, C] input with a bias returns addmm's
[B*T, N] result viewed back as [B, T, N] (a view of a tensor the op made
inside itself). AOT's eager layouts (compile/aot/eager_meta.cpp) took that
view for the root of its storage and refused the output ("views an
intermediate laid out otherwise than eager's"), so a bare nn.Linear on a
3-d input ran op by op. Now the view's base is the root: the graph returns
addmm's result and the caller gets eager's view of it.

Checked on every backend: nn.Linear and F.linear (bias, no bias, a
non-contiguous input, a 4-d input, a shape large enough for a oneDNN step
on llvm), inference and a training step's gradients: one graph each, no
op-by-op fallback, eager's values, sizes and strides."""
import torch
import torch.nn as nn
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, check, check_equal, finish, tensors_same


def same(got, want):
    return got.shape == want.shape and got.stride() == want.stride() and tensors_same(got, want, rtol=1e-4, atol=1e-4)


def cases():
    torch.manual_seed(7)
    small, large = nn.Linear(64, 96), nn.Linear(256, 384)
    w = torch.randn(48, 64)
    x = torch.randn(4, 33, 64)
    return [
        ("nn.Linear on [4, 33, 64]", small, x),
        ("nn.Linear on [4, 33, 256] (a oneDNN step on llvm)", large, torch.randn(4, 33, 256)),
        ("F.linear with a bias", lambda t: F.linear(t, small.weight, small.bias), x),
        ("F.linear without a bias", lambda t: F.linear(t, w), x),
        ("nn.Linear on a transposed (non-contiguous) input", lambda t: small(t.transpose(0, 1)), x),
        ("nn.Linear on a 4-d input", small, torch.randn(2, 3, 11, 64)),
        ("nn.Linear then a view of its output", lambda t: small(t).view(4, 33 * 96), x),
    ]


def run(name, fn, x, grad):
    tracejit.reset()  # (the cases share Linear.forward: no cache limit reached)
    before = tracejit.counters()
    compiled = tracejit.compile(fn, backend=BACKEND)
    with torch.set_grad_enabled(grad):
        want = fn(x)
        got = compiled(x)
        got = compiled(x)  # the compiled call, not the capture
    after = tracejit.counters()
    mode = "training" if grad else "inference"
    check(same(got, want), f"{name} ({mode}): eager's values, sizes and strides")
    check_equal(after["graphs_compiled"] - before["graphs_compiled"], 1, f"{name} ({mode}): one graph")
    check_equal(after["graph_breaks"] - before["graph_breaks"], 0, f"{name} ({mode}): no graph break")
    check_equal(after["backend_fallbacks"] - before["backend_fallbacks"], 0, f"{name} ({mode}): not op by op")
    if grad:
        params = [p for p in (fn.parameters() if isinstance(fn, nn.Module) else []) if p.requires_grad]
        for p in params:
            p.grad = None
        want.square().sum().backward()
        want_grads = [p.grad.clone() for p in params]
        for p in params:
            p.grad = None
        got.square().sum().backward()
        check(all(tensors_same(p.grad, g, rtol=1e-4, atol=1e-3) for p, g in zip(params, want_grads)),
              f"{name} (training): eager's parameter gradients")


def main():
    print(f"backend {BACKEND}")
    for name, fn, x in cases():
        run(name, fn, x, grad=False)
    for name, fn, x in cases():
        if isinstance(fn, nn.Module):
            run(name, fn, x, grad=True)
    finish()


if __name__ == "__main__":
    main()
