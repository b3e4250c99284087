# FIXED in round 24 (written by hand: the tracer's model of fill_'s grad
# write, 9979603's class; failed on main's build before this fix on every
# backend, eager included). `x1[1] = x0` (a 0-d x0 requiring grad) is a
# select then `fill_(x0)` on it: LibTorch 1.13 makes the int64 x1 require
# grad. `x2[...] = x0` on a 0-d bool x2 is a `copy_` (same sizes), which
# checks the dtype: False. Under no_grad: False. `x1 & 1` does not require
# grad (the trace keeps its meta's flag).
import torch

LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((), generator=g, dtype=torch.float32)
    x1 = torch.randint(-3, 4, (3, 2), generator=g)
    x2 = torch.randint(0, 2, (), generator=g).bool()
    x3 = torch.randint(0, 2, (4,), generator=g).bool()
    x0.requires_grad_()
    return [x0, x1, x2, x3]


def fn(x0, x1, x2, x3):
    x1[1] = x0
    x2[...] = x0
    print('p', x1.requires_grad, x2.requires_grad)
    with torch.no_grad():
        x3[...] = x0
    print('p', x3.requires_grad)
    v = x1 & 1
    print('p', v.requires_grad)
    return (x0 * 2, v)
