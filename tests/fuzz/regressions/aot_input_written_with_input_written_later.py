# FIXED (found by scripts/fuzz, seed 777395): under AOT, `x0[...] = x1`
# then `x1.fill_(3)` left x0 full of 3s. The functional value of x0 was x1's
# placeholder itself (LibTorch's functional copy_ of an equal-shaped tensor
# is its source), and AOT's wrapper writes the mutated inputs back one after
# another: x1 first here, so x0 read the 3s. A mutated input's new value
# that is (a view of) another mutated input is now a clone made in the graph
# (compile/aot/capture.cpp, classify).
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((2, 1), generator=g, dtype=torch.float32).expand(2, 1)
    x1 = torch.randn((1,), generator=g, dtype=torch.float32)
    return [x0, x1]


def fn(x0, x1):
    x0[...] = x1
    v1 = x1.fill_(3)
    a = x1.new_zeros(3)
    b = x1.new_ones(3)
    a.copy_(b)  # a's new value is b: written after b below
    b.mul_(5)
    return {"v1": v1, "a": a, "b": b}
