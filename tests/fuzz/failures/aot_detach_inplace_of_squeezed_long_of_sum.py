# OPEN, expected to fail (round 12 fresh campaign, seed 9904717, shrunk by
# fuzz.py; fails on ef77ef6 as well): v3 = (x0 + x0).long() of a 0-d bool
# input, v3.squeeze_(), then v3.detach_(). Eager runs; under aot_eager the
# call raises "Can't detach views in-place. Use detach() instead" (the
# compiled v3 comes back as a view). llvm passes. Not triaged further.
import torch
LOG = []

def helper1(a, b):
    return a + b

def helper12(*args):
    pass

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(0, 2, (), generator=g).bool()
    return [x0]

def fn(x0):
    v2 = helper1(x0, x0)
    v3 = v2.long()
    v6 = v3.squeeze_()
    v3.detach_()
    return ()
