"""Random draws in eager's order beside data-dependent sizes (issue 39,
round 25). A graph with a data-dependent op (x[mask], nonzero, unique,
masked_select) is cut into a head compiled before the op, the op run op by
op, and a tail compiled per size after it (graph/unbacked_split.h). The head
runs first: a draw that depends on no data-dependent size (`torch.rand(2)`)
but comes after a draw of the tail (`torch.rand_like(x[x > 0])`) drew
eager's first numbers on aot_eager and llvm (d1772ea). Each program below
is called compiled and eagerly from the same seed, twice and at other
sizes, and must give eager's values bit for bit and leave the generator
where eager leaves it."""
import torch
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, check, finish


def mask_then_rand(x):
    m = x[x > 0]
    return torch.rand_like(m), torch.rand(2)


def rand_before_and_after(x):
    r0 = torch.rand(3)
    m = x[x > 0]
    return r0, torch.randn_like(m), torch.randn(2) + x.sum()


def nonzero_then_randint(x):
    idx = torch.nonzero(x > 0)
    return torch.randint(0, 10, (idx.shape[0],)), torch.randint(0, 10, (3,))


def masked_select_then_dropout(x):
    m = torch.masked_select(x, x > 0)
    return F.dropout(m * 2, 0.5, training=True), F.dropout(x, 0.5, training=True)


def unique_then_bernoulli(x):
    u = torch.unique(x.round())
    return torch.bernoulli(torch.full_like(u, 0.5)), torch.bernoulli(torch.full((4,), 0.5))


def draw_used_by_input_math(x):
    m = x[x > 0]
    a = torch.rand_like(m) + m
    b = x * torch.rand(x.shape[0])
    return a, b


PROGRAMS = [mask_then_rand, rand_before_and_after, nonzero_then_randint, masked_select_then_dropout,
            unique_then_bernoulli, draw_used_by_input_math]
INPUTS = [torch.tensor([1.0, -1.0, 2.0, 3.0]), torch.tensor([1.0, -1.0, 2.0, 3.0]),
          torch.tensor([-1.0, 4.0, -2.0, 3.0, 5.0, 0.5]), torch.tensor([0.5, 1.5, -3.0, 2.5, -0.5, 7.0, 8.0])]

for fn in PROGRAMS:
    tracejit.reset()
    compiled = tracejit.compile(fn, backend=BACKEND)
    for i, x in enumerate(INPUTS):
        torch.manual_seed(10 + i)
        want = fn(x)
        want_next = torch.rand(4)
        torch.manual_seed(10 + i)
        got = compiled(x)
        got_next = torch.rand(4)
        same = len(got) == len(want) and all(
            g.dtype == w.dtype and g.shape == w.shape and torch.equal(g, w) for g, w in zip(got, want))
        check(same, f"{fn.__name__} call {i}: eager's draws {[t.tolist() for t in want]}, "
                    f"compiled {[t.tolist() for t in got]}")
        check(torch.equal(got_next, want_next), f"{fn.__name__} call {i}: the generator after the call")

finish()
