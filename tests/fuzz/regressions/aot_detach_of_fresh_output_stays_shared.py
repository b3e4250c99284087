# FIXED before it was merged (2026-11-26, branch aotfix; found by the fuzzer,
# seed 31552, shrunk): v14 = v13.detach() shares v13's memory, so
# `v13 *= 2` shows through v14. Both outputs of the first graph are fresh
# (detach is no autograd view); a first version of the copy of fresh
# outputs sharing a value copied v14 because its node has v13's root. Now
# a fresh output is copied only where eager's does not share memory.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(-4, 5, (1, 3), generator=g).expand(4, 3)
    x1 = 3
    return [x0, x1]

def fn(x0, x1):
    v13 = x0[torch.tensor([0])]
    v14 = v13.detach()
    print('p', type(v13).__name__, v13.requires_grad)
    v13 *= 2
    return (v14,)
