"""Automatic dynamic Python scalars read from objects (issues 42 item 3,
43): an int or float read from an object attribute or a dict item (an LR
scheduler's `last_epoch` and `_step_count`, a param group's `lr`, a plain
object's float) whose value changes between calls is traced as a graph
input on the recompile, not kept as a guarded constant; a comparison on it
(`if self.last_epoch == 0`) guards the comparison's outcome, not the value.

A whole training step (forward, backward, optimizer step, scheduler step)
with SGD / Adam / AdamW and StepLR / OneCycleLR / LambdaLR over 10 steps:
losses, final parameters and learning rates equal eager's (bit for bit on
eager/aot_eager), at most 2 graphs compiled, no break. Plus floats and
ints on plain objects and in dicts, comparisons on them, and a float whose
value the trace needs (it stays a constant: recompiles, right values)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, check, check_equal, finish, tensors_same

def same(got, want):
    return tensors_same(got, want, rtol=1e-4, atol=1e-5, dtypes=True)


def counters():
    c = tracejit.counters()
    return c.get("graphs_compiled", 0), c.get("graph_breaks", 0)


# ---- a float and an int on a plain object, a float in a dict
class Config:
    pass


cfg = Config()
cfg.scale = 0.5
cfg.shift = 3
table = {"gain": 1.5}


def scaled(x):
    return x * cfg.scale + cfg.shift - table["gain"] * x


tracejit.reset()
compiled = tracejit.compile(scaled, backend=BACKEND)
x = torch.randn(5)
ok = True
for i in range(8):
    cfg.scale, cfg.shift, table["gain"] = 0.5 + 0.1 * i, 3 + i, 1.5 / (i + 1)
    ok = ok and same(compiled(x), scaled(x))
check(ok, "a float attribute, an int attribute and a float dict item changing each call: eager's values")
check(counters()[0] <= 2, f"... at most 2 graphs compiled over 8 values (got {counters()[0]})")


# ---- a comparison guards its outcome, not the value
def branchy(x):
    if cfg.scale > 1.0:
        return x * cfg.scale
    return x - cfg.scale


tracejit.reset()
compiled = tracejit.compile(branchy, backend=BACKEND)
ok = True
for s in (0.1, 0.2, 0.3, 0.4, 2.0, 3.0, 4.0, 0.5, 5.0):
    cfg.scale = s
    ok = ok and same(compiled(x), branchy(x))
check(ok, "a branch on a float attribute: eager's side taken for each value")
check(counters()[0] <= 3, f"... at most 3 graphs (a constant, dynamic, the other side) over 9 values (got {counters()[0]})")


def modulo(x):
    if cfg.shift % 3 != 0:
        return x + 1
    return x * 2


tracejit.reset()
compiled = tracejit.compile(modulo, backend=BACKEND)
ok = True
for n in (1, 2, 4, 5, 7, 3, 6, 9, 8):
    cfg.shift = n
    ok = ok and same(compiled(x), modulo(x))
check(ok, "a branch on `n % 3 != 0` of an int attribute: eager's side taken for each value")
check(counters()[0] <= 3, f"... at most 3 graphs over 9 values (got {counters()[0]})")


# ---- a float whose value the trace needs stays a constant (recompiles, right values)
def needs_value(x):
    return torch.full((2,), cfg.scale) + x[:2]


tracejit.reset()
compiled = tracejit.compile(needs_value, backend=BACKEND)
ok = True
for s in (0.1, 0.2, 0.3, 0.4):
    cfg.scale = s
    ok = ok and same(compiled(x), needs_value(x))
check(ok, "a float attribute passed where its value is needed: eager's values")


# ---- a whole training step with an LR scheduler
OPTIMIZERS = {
    "SGD": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    "Adam": lambda p: torch.optim.Adam(p, lr=0.01),
    "AdamW": lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1),
}
# (scheduler, the most graphs over the steps). StepLR(step_size=1) and
# LambdaLR write a new lr from the first step on: one compile with
# constants, one with the changing numbers as graph inputs. OneCycleLR's
# `step_num <= end_step` has one outcome per phase (a third).
# StepLR(step_size=3)'s `last_epoch % 3 != 0` has two outcomes, each met
# once with the lr a constant (it changes only at the third step) and once
# with it an input: 1 + 4; later steps reuse them.
SCHEDULERS = {
    "StepLR": (lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.9), 2),
    "StepLR(step_size=3)": (lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5), 5),
    "OneCycleLR": (lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=20), 3),
    "LambdaLR": (lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda s: 0.9 ** s), 2),
}
STEPS = 12

torch.manual_seed(1)
batches = [(torch.randn(6, 8), torch.randn(6, 4)) for _ in range(STEPS)]


def train_step(model, opt, sched, batch):
    x, y = batch
    opt.zero_grad(set_to_none=True)
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    sched.step()
    return loss.detach()


for opt_name, make_opt in OPTIMIZERS.items():
    for sched_name, (make_sched, most_graphs) in SCHEDULERS.items():
        label = f"{opt_name} + {sched_name}"

        def make():
            torch.manual_seed(0)
            m = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
            o = make_opt(m.parameters())
            return m, o, make_sched(o)

        ref, res = make(), make()
        tracejit.reset()
        compiled = tracejit.compile(train_step, backend=BACKEND)
        ref_losses = [train_step(*ref, b) for b in batches]
        res_losses = [compiled(*res, b) for b in batches]
        graphs, breaks = counters()
        check(same(res_losses, ref_losses), f"{label}: {STEPS} losses equal eager's")
        check(same(list(res[0].parameters()), list(ref[0].parameters())), f"{label}: final parameters equal eager's")
        check_equal(res[1].param_groups[0]["lr"] == ref[1].param_groups[0]["lr"], True, f"{label}: the lr equals eager's")
        check_equal(res[2].last_epoch, ref[2].last_epoch, f"{label}: last_epoch")
        check(graphs <= most_graphs and breaks == 0,
              f"{label}: {graphs} graphs compiled (<= {most_graphs}), {breaks} breaks (0)")

finish()
