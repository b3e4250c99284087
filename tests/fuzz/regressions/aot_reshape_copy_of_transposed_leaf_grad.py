# FIXED the same round it was made (round 13, fresh --dynamic campaign
# seed 9954212, shrunk by hand): the backward node ran a gradient that is
# a chain of view ops of a tangent on the incoming gradient itself; x0's
# gradient here is `as_strided`/`_reshape_alias` of the tangent of
# x0.reshape(-1, 4) (a copy of the transposed x0), whose strides address
# the storage: run on the expanded gradient of `.sum()`, it read past its
# one element (garbage such as 1e24 in x0.grad). Only chains of view ops
# that read the same elements whatever their input's layout are run so.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((4, 4, 4), generator=g, dtype=torch.float32).transpose(-1, -2)
    x0.requires_grad_()
    return [x0]

def fn(x0):
    v4 = x0.reshape(-1, 4)
    return (v4, x0)
