# OPEN, expected to fail (round 19's campaign, static seed 9986676, shrunk by
# hand; aot_eager and llvm): `v2 = x1.view(-1); v2[...] = v2` writes x1
# (which does not require grad) with its own values, bumping its version
# to 1; then `v2 * x0` (x0 requires grad) saves v2 at version 1, and the
# backward runs. Compiled, the backward raises "one of the variables needed
# for gradient computation has been modified by an inplace operation: ... is
# at version 1; expected version 0". The functional graph's new value of x1
# is a view of x1 itself (the self-copy is the identity), and the saved
# value for mul's formula is another view of x1: the backward node saves it
# at version 0, then the wrapper's epilogue bumps x1's version for the
# write (runtime_wrapper.cpp: only inputs whose data is not written are
# bumped before the node saves). Bumping a written input before the save
# where its new value is its own memory would fix this program and break
# its mirror, `y = x1 * x0; x1.copy_(x1)`, where eager saved x1 before the
# write and its backward raises (compiled too, today): the functional graph does not keep whether
# a saved alias of an input was read before or after the input's write;
# the capture would have to note each saved value's version (not done).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((1,), generator=g, dtype=torch.float64).expand(4)
    x1 = torch.randn((4,), generator=g, dtype=torch.float64)
    x0.requires_grad_()
    return [x0, x1]

def fn(x0, x1):
    v2 = x1.view(-1)
    v2[...] = v2
    v7 = v2 * x0 + 1
    return (v7,)
