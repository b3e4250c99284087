"""Issue 42: `backward(retain_graph=True)` inside a compiled training step.
The traced backward keeps its nodes (tracejit::autograd_grad's
retain_graph), so a later backward through the same graph (the same loss
again, or a second loss sharing the trunk) stays in the one graph, and
`.grad` accumulates as eager's AccumulateGrad does. Results, parameters
and `.grad` equal eager's bit for bit on eager/aot_eager, within float
tolerance on llvm. Refused with a reason and eager's behaviour: a write in
place (an optimizer step) between the retaining backward and the next one
through its nodes (eager raises its version-counter error), and a
retained loss returned with live history (outlives the graph)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, check, check_equal, check_raises, finish, tensors_same as same



def state():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    return m, torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)


torch.manual_seed(1)
batches = [(torch.randn(6, 8), torch.randn(6, 4)) for _ in range(3)]


def counts(fn, *args):
    ex = tracejit.explain(fn)(*args)
    return (ex.graph_count, ex.graph_break_count), " | ".join(r.reason for r in ex.break_reasons)


def twice_retained(model, opt, batch):
    loss = F.mse_loss(model(batch[0]), batch[1])
    loss.backward(retain_graph=True)
    loss.backward()  # through the kept nodes: every .grad doubles
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.detach()


def shared_trunk(model, opt, batch):
    h = model[1](model[0](batch[0]))
    out = model[2](h)
    main = F.mse_loss(out, batch[1])
    aux = h.pow(2).mean() * 0.1
    main.backward(retain_graph=True)
    aux.backward()  # through the trunk main's backward kept
    opt.step()
    opt.zero_grad()
    return main.detach(), aux.detach()


def functional_retained(model, opt, batch):
    loss = F.mse_loss(model(batch[0]), batch[1])
    torch.autograd.backward(loss, retain_graph=True)
    grads = [p.grad.clone() for p in model.parameters()]
    torch.autograd.backward(loss * 0.5)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.detach(), grads


def retained_only(model, opt, batch):
    loss = F.mse_loss(model(batch[0]), batch[1])
    loss.backward(retain_graph=True)  # never used again: as a plain backward
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.detach()


for step in (twice_retained, shared_trunk, functional_retained, retained_only):
    tracejit.reset()
    ref, res = state(), state()
    compiled = tracejit.compile(step, backend=BACKEND)
    before = tracejit.counters().get("backend_fallbacks", 0)
    ok = True
    for b in batches:
        want, got = step(*ref, b), compiled(*res, b)
        flat_want = [t for item in (want if isinstance(want, tuple) else (want,))
                     for t in (item if isinstance(item, list) else [item])]
        flat_got = [t for item in (got if isinstance(got, tuple) else (got,))
                    for t in (item if isinstance(item, list) else [item])]
        ok &= same(flat_got, flat_want)
    check(ok, f"{step.__name__}: results equal eager's")
    check(same(list(res[0].parameters()), list(ref[0].parameters())), f"{step.__name__}: parameters equal eager's")
    check(all((p.grad is None) == (q.grad is None) and (p.grad is None or same(p.grad, q.grad))
              for p, q in zip(res[0].parameters(), ref[0].parameters())), f"{step.__name__}: .grad equal eager's")
    check_equal(tracejit.counters().get("backend_fallbacks", 0) - before, 0, f"{step.__name__}: no op-by-op fallback")
    tracejit.reset()
    got, why = counts(step, *state(), batches[0])
    check_equal(got, (1, 0), f"{step.__name__}: one graph, no break [{why}]")


# ---- a step between the retaining backward and the next: eager's version-counter error
def step_between(model, opt, batch):
    loss = F.mse_loss(model(batch[0]), batch[1])
    loss.backward(retain_graph=True)
    opt.step()  # writes the weights the graph saved
    loss.backward()


tracejit.reset()
eager_error = check_raises(RuntimeError, lambda: step_between(*state(), batches[0]), "eager: a step between raises")
compiled_error = check_raises(RuntimeError, lambda: tracejit.compile(step_between, backend=BACKEND)(*state(), batches[0]),
                              "compiled: a step between raises")
# On the AOT backends the compiled frames raise another RuntimeError ("A
# view was created in no_grad mode ...") when the optimizer step between
# the two backwards runs: a defect of AOT's outputs that main has too with
# retain_graph refused (the same breaks); not pinned here.
if BACKEND == "eager":
    check(eager_error is not None and compiled_error is not None and str(eager_error) == str(compiled_error),
          "a step between two backwards of a retained graph: the compiled error is eager's")


def step_between_safe(model, opt, batch):
    loss = F.mse_loss(model(batch[0]), batch[1])
    loss.backward(retain_graph=True)
    with torch.no_grad():
        model[2].bias.add_(1.0)  # the bias is not saved by the graph: eager does not raise
    loss.backward()
    return loss.detach()


tracejit.reset()
ref, res = state(), state()
want = step_between_safe(*ref, batches[0])
got = tracejit.compile(step_between_safe, backend=BACKEND)(*res, batches[0])
check(same(got, want) and same([p.grad for p in res[0].parameters()], [p.grad for p in ref[0].parameters()]),
      "an in-place write between retained backwards: eager's results")
tracejit.reset()
(_, breaks), why = counts(step_between_safe, *state(), batches[0])
# The second backward is refused (an in-place write since the retaining
# one); the loss it needs then crosses the break with live history, so the
# trace is made again with the break at the first backward.
check(breaks >= 1 and "outlives the graph" in why, f"an in-place write between retained backwards breaks [{why}]")


# ---- the retained loss returned: live history outlives the graph
def returns_retained(model, opt, batch):
    loss = F.mse_loss(model(batch[0]), batch[1])
    loss.backward(retain_graph=True)
    return loss


tracejit.reset()
ref, res = state(), state()
want = returns_retained(*ref, batches[0])
got = tracejit.compile(returns_retained, backend=BACKEND)(*res, batches[0])
check(same(got.detach(), want.detach()) and got.grad_fn is not None, "a returned retained loss has a grad_fn")
got.backward()
want.backward()
check(same([p.grad for p in res[0].parameters()], [p.grad for p in ref[0].parameters()]),
      "a backward of the returned retained loss accumulates as eager's")
tracejit.reset()
(_, breaks), why = counts(returns_retained, *state(), batches[0])
check(breaks >= 1 and "outlives the graph" in why, f"a returned retained loss breaks [{why}]")

finish()
