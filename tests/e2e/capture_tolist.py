"""Issue 42, item 4: `Tensor.tolist()` in a traced frame. Without
config.capture_scalar_outputs (the default) it is traced as with it when
the frame then traces whole (a branch on a number breaks at the read with a
reason naming tolist and the option: capture_scalar_reads); with it, the tensor is copied once as eager's Python numbers
(float64 / int64 / bool) and each element becomes a traced number, nested
as the tensor's dims, so Python arithmetic over them (an actor-critic's
discounted returns) and `torch.tensor` of the results stay in the graph.
The zoo's actor-critic training step (tolist, torch.tensor, backward, Adam)
is then one graph with eager's losses and parameters. A tensor of more than
1024 elements breaks instead."""
import os
import sys

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from zoo import PROGRAMS  # noqa: E402

EXACT = BACKEND in ("eager", "aot_eager")


def same(got, want):
    if isinstance(want, (list, tuple)):
        return isinstance(got, (list, tuple)) and len(got) == len(want) and all(same(g, w) for g, w in zip(got, want))
    if isinstance(want, torch.Tensor):
        if EXACT:
            return got.dtype == want.dtype and torch.equal(got, want)
        return got.dtype == want.dtype and torch.allclose(got, want, rtol=1e-5, atol=1e-6)
    return type(got) is type(want) and got == want


def counts(fn, *args):
    ex = tracejit.explain(fn)(*args)
    return (ex.graph_count, ex.graph_break_count), " | ".join(r.reason for r in ex.break_reasons)


def discounted(rewards, gamma=0.9):
    returns, r_acc = [], 0.0
    for r in rewards.tolist()[::-1]:
        r_acc = r + gamma * r_acc
        returns.insert(0, r_acc)
    return torch.tensor(returns) * 2


def nested(x):
    rows = x.tolist()
    return torch.tensor([[v + 1 for v in row] for row in rows]), rows


def of_ints(x):
    return x.tolist(), x.sum()


rewards = torch.rand(7)
grid = torch.randn(2, 3)
ints = torch.tensor([3, -1, 4])

tracejit.config.capture_scalar_outputs = False
tracejit.reset()
check(same(tracejit.compile(discounted, backend=BACKEND)(rewards), discounted(rewards)),
      "tolist without capture_scalar_outputs: eager's values")
tracejit.reset()
got, why = counts(discounted, rewards)
check_equal(got, (1, 0), f"tolist without capture_scalar_outputs, numbers only computed with: one graph [{why}]")

tracejit.config.capture_scalar_outputs = True
for fn, args in ((discounted, (rewards,)), (nested, (grid,)), (of_ints, (ints,))):
    tracejit.reset()
    compiled = tracejit.compile(fn, backend=BACKEND)
    ok = same(compiled(*args), fn(*args))
    other = tuple(a * 2 + 1 for a in args)  # other values, same sizes: no recompile, new numbers
    ok &= same(compiled(*other), fn(*other))
    check(ok, f"{fn.__name__}: eager's values (and Python numbers of eager's types)")
    tracejit.reset()
    got, why = counts(fn, *args)
    check_equal(got, (1, 0), f"{fn.__name__}: one graph [{why}]")

tracejit.reset()
big = torch.rand(2000)
check(same(tracejit.compile(discounted, backend=BACKEND)(big), discounted(big)), "a 2000-element tolist: eager's values")
tracejit.reset()
(_, breaks), why = counts(discounted, big)
check(breaks >= 1 and "more than 1024" in why, f"a 2000-element tolist breaks [{why}]")

# ---- the zoo's actor-critic training step
tracejit.reset()
program = PROGRAMS["actor_critic"]("test")
ref, res = program.make_state(), program.make_state()
compiled = tracejit.compile(program.train_step, backend=BACKEND)
before = tracejit.counters().get("backend_fallbacks", 0)
losses_ok = True
for batch in program.batches:
    want = program.train_step(ref, batch)
    got = compiled(res, batch)
    losses_ok &= same(got.detach(), want.detach())
check(losses_ok, "actor_critic training: losses equal eager's")
check(same(list(res[0].parameters()), list(ref[0].parameters())), "actor_critic training: parameters equal eager's")
check_equal(tracejit.counters().get("backend_fallbacks", 0) - before, 0, "actor_critic training: no op-by-op fallback")
tracejit.reset()
got, why = counts(program.train_step, program.make_state(), program.batches[0])
check_equal(got, (1, 0), f"actor_critic training: one graph, no break [{why}]")
tracejit.config.capture_scalar_outputs = False
finish()
