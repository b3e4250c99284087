# FIXED in round 24 (round 23's `--dynamic` campaign, seed 9985239, not
# shrunk; failed on main's build before this fix, aot_eager and llvm; not run without
# --dynamic).
# fuzz mode: --dynamic
# x1.grad's strides on its size-1 dim: a (n0, 1) leaf laid out as a
# transposed (1, n0), returned as is and read by clamp: eager's gradient
# has strides (1, n0), the compiled one's had (1, 1) at variants 4 and 5
# (dynamic=True) and 5 (dynamic=None). Values equal. Not the engine-sum
# class: those are the sizes the AOT size template's one program serves,
# whose plan had no backward graph, so the layout inference that gives a
# computed gradient eager's formulas' size-1 strides (eager_layouts) never
# ran there. Now, where the one program serves sizes at which an input
# with a gradient has a size-1 dim, these sizes' joint graph is specialized
# and partitioned (no backend compile) for that inference only
# (Plan::layout_graph; compile/aot/aot_template.cpp, needs_layout_graph).
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
