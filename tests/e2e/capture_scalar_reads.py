"""Issue 42: numbers read from tensors (`Tensor.item()`, `.tolist()`) with
the default config (capture_scalar_outputs off). A number that only flows
into traced arithmetic and back into tensors (`torch.tensor(list)`), or
leaves the graph as the frame's return value or into a list, stays in the
graph: an actor-critic's training step that walks `rewards.tolist()` to
discount returns is one graph with eager's losses, gradients and Adam
state (the numbers detached, as Python numbers are). A number whose value the trace needs as a Python value (a branch,
an f-string) breaks at the read with the reason naming it, as before: the
frame is traced again with the break there, so that no number is ever
specialized. Values are eager's on every call (new data, no recompile)."""
import os
import sys

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from zoo import PROGRAMS  # noqa: E402

EXACT = BACKEND in ("eager", "aot_eager")


def counts(fn, *args):
    tracejit.reset()
    ex = tracejit.explain(fn)(*args)
    return (ex.graph_count, ex.graph_break_count), " | ".join(r.reason for r in ex.break_reasons)


def close(got, want, fp64=None):
    """Eager's values: bit for bit on eager/aot_eager; on llvm no further
    from float64 than eager is (tensors with `fp64`), else within 1e-5."""
    if isinstance(want, (list, tuple)):
        refs = fp64 if fp64 is not None else [None] * len(want)
        return len(got) == len(want) and all(close(g, w, f) for g, w, f in zip(got, want, refs))
    if isinstance(want, float):
        return type(got) is float and (got == want if EXACT else abs(got - want) <= 1e-5 * (1 + abs(want)))
    if not isinstance(want, torch.Tensor):
        return type(got) is type(want) and got == want
    if EXACT:
        return got.dtype == want.dtype and torch.equal(got, want)
    if fp64 is not None:
        return tracejit.same(want, got, fp64_ref=fp64)
    return torch.allclose(got, want, rtol=1e-4, atol=1e-5)


check(not tracejit.config.capture_scalar_outputs, "capture_scalar_outputs is off (the default)")


# ---- the actor-critic step (tests/models/zoo.py's, as in the PyTorch examples:
# `for r in rewards.tolist()[::-1]: R = r + gamma * R`, `torch.tensor(returns)`, Adam)
program = PROGRAMS["actor_critic"]("test")
states, taken, rewards = program.batches[0]


def batch(seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(states.shape, generator=g, dtype=dtype), torch.randint(0, 2, taken.shape, generator=g),
            torch.rand(rewards.shape, generator=g, dtype=dtype))


def adam_state(state):
    model, (opt,), _ = state
    return [v for p in model.parameters() for v in (opt.state[p]["exp_avg"], opt.state[p]["exp_avg_sq"],
                                                    opt.state[p]["step"])]


def params_and_grads(state):
    return [p.detach() for p in state[0].parameters()], [p.grad for p in state[0].parameters()]


got, why = counts(program.train_step, program.make_state(), batch(0))
check_equal(got, (1, 0), f"actor-critic step with rewards.tolist(): one graph, no break [{why}]")

tracejit.reset()
ref, res, f64 = program.make_state(), program.make_state(), program.make_state(torch.float64)
compiled = tracejit.compile(program.train_step, backend=BACKEND)
ref_losses = [program.train_step(ref, batch(s)) for s in range(5)]
res_losses = [compiled(res, batch(s)) for s in range(2)]  # the second call recompiles: Adam's state now exists
recompiles = tracejit.counters().get("recompiles", 0)
res_losses += [compiled(res, batch(s)) for s in range(2, 5)]
f64_losses = [program.train_step(f64, batch(s, torch.float64)) for s in range(5)]
check(close(res_losses, ref_losses, f64_losses), "actor-critic: losses equal eager's over 5 steps (new rewards each)")
check(close(params_and_grads(res), params_and_grads(ref), params_and_grads(f64)),
      "actor-critic: final parameters and gradients equal eager's")
check(close(adam_state(res), adam_state(ref), adam_state(f64)), "actor-critic: Adam's state equals eager's")
check_equal(tracejit.counters().get("recompiles", 0) - recompiles, 0, "actor-critic: steps 3-5 (new rewards each) compile nothing new")


# ---- a number into tensor arithmetic; returned; appended to a list
def scale_by_max(t):
    return t * t.abs().max().item()


def step_returning_item(t):
    loss = (t * t).mean()
    return t + 1, loss.item()


def logged(t, log):
    loss = t.sum()
    log.append(loss.item())
    return t * 2


x = torch.randn(4, 6)
for fn, args, what in ((scale_by_max, (x,), "item() into a tensor op"),
                       (step_returning_item, (x,), "item() returned as a Python float")):
    got, why = counts(fn, *args)
    check_equal(got, (1, 0), f"{what}: one graph, no break [{why}]")
    tracejit.reset()
    c = tracejit.compile(fn, backend=BACKEND)
    for seed in range(3):
        a = torch.randn(4, 6, generator=torch.Generator().manual_seed(seed))
        check(close(c(a), fn(a)), f"{what}: eager's values (call {seed})")

log_ref, log_res = [], []
got, why = counts(logged, x, [])
check_equal(got, (1, 0), f"item() appended to a list argument: one graph, no break [{why}]")
tracejit.reset()
c = tracejit.compile(logged, backend=BACKEND)
for seed in range(3):
    a = torch.randn(4, 6, generator=torch.Generator().manual_seed(seed))
    check(close(c(a, log_res), logged(a, log_ref)), f"item() appended: eager's result (call {seed})")
check(close(log_res, log_ref) and all(type(v) is float for v in log_res),
      f"item() appended: the list holds eager's Python floats {log_res}")


# ---- a number carries no autograd history (eager's `R - value.item()` sends
# no gradient into `value`): found by probe p17 (actor-critic), where the
# number kept the tensor's history in the graph and the gradients were wrong
def grad_through_item(w, x):
    v = (w * x).sum()
    loss = v * (2.0 - v.item())
    loss.backward()
    return w.grad.clone()


def grad_through_tolist(w, x):
    v = w * x
    loss = (v * torch.tensor(v.tolist())).sum() + (v * v.tolist()[1]).sum()
    loss.backward()
    return w.grad.clone()


for capture in (False, True):
    tracejit.config.capture_scalar_outputs = capture
    for fn in (grad_through_item, grad_through_tolist):
        tracejit.reset()
        c = tracejit.compile(fn, backend=BACKEND)
        for seed in range(2):
            g = torch.Generator().manual_seed(seed)
            x, w = torch.randn(3, generator=g), torch.randn(3, generator=g)
            got, want = c(w.clone().requires_grad_(), x), fn(w.clone().requires_grad_(), x)
            check(close(got, want), f"{fn.__name__} (capture_scalar_outputs={capture}): eager's gradient (call {seed})")
        got, why = counts(fn, torch.randn(3, requires_grad=True), torch.randn(3))
        check_equal(got, (1, 0), f"{fn.__name__} (capture_scalar_outputs={capture}): one graph [{why}]")
tracejit.config.capture_scalar_outputs = False


# ---- a number needed as a Python value: a break at the read, as before
def branch_on_item(t):
    if t.sum().item() > 0:
        return t + 1
    return t - 1


def format_item(t):
    loss = t.sum() * 2
    text = f"loss {loss.item():.3f}"
    return loss + 1, text


for fn, what in ((branch_on_item, "a branch on item()"), (format_item, "an f-string of item()")):
    got, why = counts(fn, x)
    check(got[1] >= 1 and "Tensor.item() needs the tensor's data" in why,
          f"{what}: breaks at the read with its reason [{got} {why}]")
    tracejit.reset()
    c = tracejit.compile(fn, backend=BACKEND)
    for sign in (1, -1, 1):
        check(close(c(x * sign), fn(x * sign)), f"{what}: eager's values (sign {sign})")


def branch_under_no_grad(x, w):
    y = x @ w
    with torch.no_grad():
        m = y.abs().max().item()
        if m > 0:
            y2 = y * 2
    return y.sum() + y2.sum()


# The trace that stopped at the branch left grad mode off (inside the no_grad
# block); the frame's second trace must start as the frame enters (found by
# compile_all_transcript's tiny_gpt: "GRAD_MODE disabled ... can never pass again").
tracejit.reset()
c = tracejit.compile(branch_under_no_grad, backend=BACKEND)
w = torch.randn(4, 2, requires_grad=True)
for seed in range(2):
    a = torch.randn(3, 4, generator=torch.Generator().manual_seed(seed))
    got = c(a, w)
    check(torch.is_grad_enabled(), f"a break under no_grad after an item(): grad mode enabled after the call {seed}")
    want = branch_under_no_grad(a, w)
    check(got.requires_grad and close(got.detach(), want.detach()),
          f"a break under no_grad after an item(): eager's value, requiring grad (call {seed})")


def tolist_branch(r):
    total = 0.0
    for v in r.tolist():
        if v > 0.5:
            total += v
    return r * total


got, why = counts(tolist_branch, torch.rand(5))
check(got[1] >= 1 and "Tensor.tolist() needs the tensor's data" in why,
      f"a branch on a tolist() number: breaks at the read with its reason [{got} {why}]")
tracejit.reset()
c = tracejit.compile(tolist_branch, backend=BACKEND)
for seed in range(3):
    r = torch.rand(5, generator=torch.Generator().manual_seed(seed))
    check(close(c(r), tolist_branch(r)), f"a branch on a tolist() number: eager's values (call {seed})")
finish()
