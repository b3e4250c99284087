# Found by the fuzzer (seed 100287): `x.permute(*reversed(range(x.dim())))`
# worked on the first call and raised "permute() missing 1 required
# positional arguments" on every later one: reversed(range(n)) was folded
# at trace time into one range_iterator constant that the first call
# consumed. Fixed: a folded iterator becomes a tracked value.
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((2, 3, 4), generator=g)
    return [x0]


def fn(x0):
    v1 = x0.permute(*reversed(range(x0.dim())))
    v2 = [i for i in iter(range(3))]
    return (v1, v2, list(map(abs, [-1, 2])))
