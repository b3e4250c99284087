# FIXED (found by the fuzzer, seed 3700043, shrunk; every backend):
# `v5.unbind(1)[0].add_(1)` inside `try`, v5 a tensor that requires grad
# (a graph input after the break at `tolist()`, transposed in place by the
# graph). Eager's autograd refuses in-place ops on the outputs of a
# function that returns several views ("Output 0 of UnbindBackward0 is a
# view and is being modified inplace") and the `except` catches it; the op
# was traced into the graph, which failed at run time after `transpose_`
# had changed its input, and the exception escaped. The tracer now replays
# the view chain on meta tensors (graph/meta_infer.cpp,
# inplace_refused_on_view) and breaks the graph before such an op.
import torch

LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((6, 2, 1), generator=g, dtype=torch.float32)[::2]
    x1 = 0.5
    x0.requires_grad_()
    return [x0, x1]


def fn(x0, x1):
    v1 = x0.amax(1)
    LOG.append(v1[0].tolist())
    v5 = v1.transpose_(0, -2)
    v6 = v5.to(torch.float64)
    v8 = torch.mv(v5, v5[0])
    if len(LOG) > 0:
        v9 = v8.flatten()
    else:
        v9 = v1.tanh()
    if v6.dtype == torch.float32:
        v10 = x0[:, 0]
    else:
        v10 = v5.unbind(1)[0]
    try:
        v10.add_(1)
    except (RuntimeError, IndexError, TypeError, ValueError, KeyError, AttributeError, ZeroDivisionError) as e:
        v13 = torch.flip(v9, [0])
    return x0
