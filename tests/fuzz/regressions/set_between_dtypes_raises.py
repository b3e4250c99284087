# FIXED (found by scripts/fuzz, seed 1201894): `x0.set_(v)` with an int64 x0
# and a float32 v raises in eager (the binding's dtype assert), but traced
# code returned normally on every backend: meta inference (set_'s meta
# kernel does not check dtypes) let it into the graph. Meta inference now
# raises as eager does, so the op breaks the graph and raises in CPython.
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(-4, 5, (), generator=g)
    x2 = torch.randn((2, 2, 3), generator=g, dtype=torch.float32)[::2]
    return [x0, x2]


def fn(x0, x2):
    v1 = torch.tril(x2)
    v2 = v1.contiguous()
    x0.set_(v2)
    return ()
