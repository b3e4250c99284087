"""Aliasing inputs (issue 18): a graph that writes an input was traced
knowing which of its tensor inputs share memory. A later call where inputs
that were distinct tensors are the same tensor, or views of one storage,
must not reuse it (a NO_ALIASING guard fails and the frame is traced
again, as TorchDynamo guards duplicate inputs); values, written inputs and
later calls equal eager's. A graph that writes nothing keeps its compile."""
import torch

import tracejit
from e2e_util import BACKEND, check_equal, finish


def mutate_one(a, b):
    a.mul_(2)           # seen through b when b is a
    c = a * b
    b.add_(3)           # seen through a when a is b
    return c, a.sum()


def pure(a, b):
    return a * b + 1


def describe(outs, *inputs):
    return [t.tolist() for t in outs] + [t.tolist() for t in inputs]


def calls(fn, make_inputs):
    """Eager and compiled results of fn on each input set from make_inputs."""
    tracejit.reset()
    compiled = tracejit.compile(fn, backend=BACKEND)
    got, want = [], []
    for make in make_inputs:
        ins = make()
        got.append(describe(compiled(*ins), *ins))
        ins = make()
        want.append(describe(fn(*ins), *ins))
    return got, want, tracejit.counters()


def distinct():
    return torch.arange(3.) + 1, torch.arange(3.) + 5


def same_tensor():
    t = torch.arange(3.) + 1
    return t, t


def two_views():
    base = torch.arange(3.) + 1
    return base, base.view(3)   # distinct objects, one storage, same geometry


got, want, c = calls(mutate_one, [distinct, distinct, same_tensor, same_tensor, distinct])
check_equal(got, want, "the same tensor passed twice after distinct ones: compiled == eager")
check_equal(c["recompiles"], 1, "the same tensor twice: traced again once (distinct inputs were assumed)")
check_equal(c["cache_hits"], 3, "each aliasing pattern reuses its own compile")

got, want, c = calls(mutate_one, [distinct, two_views, two_views])
check_equal(got, want, "two views of one storage after distinct tensors: compiled == eager")
check_equal(c["recompiles"], 1, "two views of one storage: traced again once (NO_ALIASING)")

got, want, c = calls(mutate_one, [two_views, distinct, two_views])
check_equal(got, want, "distinct tensors after two views of one storage: compiled == eager")

got, want, c = calls(pure, [distinct, same_tensor, two_views])
check_equal(got, want, "a graph that writes nothing: compiled == eager")
check_equal(c["recompiles"], 0, "a graph that writes nothing: no guard on aliasing")

finish()
