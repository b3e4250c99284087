# OPEN, expected to fail (round 23's `--dynamic` campaign, seed 9985239,
# not shrunk; fails on main's 8ddb575 too, aot_eager and llvm; found at the
# deadline, not analysed; not run without --dynamic).
# fuzz mode: --dynamic
# x1.grad's strides on its size-1 dim: a (n0, 1) leaf laid out as a
# transposed (1, n0), returned as is (and read by clamp on one branch):
# eager's gradient has strides (1, n0), the compiled one's (1, 1), at
# variants 4 and 5 (dynamic=True) and 5 (dynamic=None). Values equal.
# The size-1-stride class of ../failures/.
import torch

LOG = []


def make_inputs(seed, variant=0):
    g = torch.Generator().manual_seed(seed)
    n0, = [(3,), (6,), (21,), (2,), (5,), (26,)][variant]
    x0 = torch.randn((2,), generator=g, dtype=torch.float64)[::2]
    x1 = torch.randn((1, n0), generator=g, dtype=torch.float64).transpose(-1, -2)
    x0.requires_grad_()
    x1.requires_grad_()
    return [x0, x1]


def fn(x0, x1):
    if x0.numel() > 1.5:
        v1 = torch.exp(x0)
    else:
        v1 = torch.clamp(x1, min=-1, max=1)
    s2 = x1.shape[-1] * 2 + 1
    return (v1, x1, s2, x0, )
