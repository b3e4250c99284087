"""Issue 42: torch.distributions with argument validation on (torch 1.13's
default), as PPO, A2C, VAE and normalizing-flow code uses them, compiled
whole: one graph, no break, eager's values.
- `Distribution.__init__`'s validation reads `param not in self.__dict__`
  on the distribution made in the frame (a snapshot for CONTAINS_OP);
- its `if not valid.all(): raise ValueError(...)` (in __init__ and in
  `_validate_sample`) is a check run after the graph, not a graph break:
  the graph computes the condition, and when it is false the call raises
  eager's exception type (ValueError), later side effects not replayed;
- a check the caller's try block would catch still breaks the graph, so
  the except clause runs as in eager;
- a `lazy_property` (Categorical's `probs`) read under no_grad is traced
  under enable_grad, as its __get__ computes it."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical, Normal

import tracejit
from e2e_util import BACKEND, EXACT, check, check_equal, check_raises, finish, tensors_same


def counts(fn, *args):
    ex = tracejit.explain(fn)(*args)
    return ex.graph_count, ex.graph_break_count, [r.reason for r in ex.break_reasons]


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.Tanh())
        self.mu = nn.Linear(16, 2)
        self.pi = nn.Linear(16, 3)
        self.v = nn.Linear(16, 1)
        self.log_std = nn.Parameter(torch.full((2,), -0.5))

    def forward(self, obs):
        h = self.body(obs)
        return self.mu(h), self.log_std.exp().expand(obs.shape[0], 2), self.pi(h), self.v(h).squeeze(-1)


def ppo_loss(model, obs, act, disc, old_logp, adv, ret):
    mu, std, logits, v = model(obs)
    dist = Normal(mu, std)
    cat = Categorical(logits=logits)
    logp = dist.log_prob(act).sum(-1) + cat.log_prob(disc)
    ratio = (logp - old_logp).exp()
    clipped = torch.clamp(ratio, 0.8, 1.2) * adv
    policy = -torch.min(ratio * adv, clipped).mean()
    entropy = dist.entropy().sum(-1).mean() + cat.entropy().mean()
    return policy + 0.5 * F.mse_loss(v, ret) - 0.01 * entropy


def data(seed):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(8, 6, generator=g)
    act = torch.randn(8, 2, generator=g)
    disc = torch.randint(0, 3, (8,), generator=g)
    return obs, act, disc, torch.randn(8, generator=g), torch.randn(8, generator=g), torch.randn(8, generator=g)


check(torch.distributions.Distribution._validate_args, "argument validation is on by default (torch 1.13)")

# Inference: the loss of a batch, under no_grad.
torch.manual_seed(0)
model = ActorCritic()


def evaluate(model, *batch):
    with torch.no_grad():
        return ppo_loss(model, *batch)


tracejit.reset()
graphs, breaks, reasons = counts(evaluate, model, *data(1))
check_equal((graphs, breaks), (1, 0), f"PPO loss with validated Normal and Categorical: one graph, no break {reasons}")
compiled = tracejit.compile(evaluate, backend=BACKEND)
for seed in (1, 2, 3):
    check(tensors_same(compiled(model, *data(seed)), evaluate(model, *data(seed)), rtol=1e-4, atol=1e-5),
          f"PPO loss: eager's value (batch {seed})")

# A training step: forward, validated distributions, backward, Adam.
torch.manual_seed(0)
m_eager, m_comp = ActorCritic(), ActorCritic()
m_comp.load_state_dict(m_eager.state_dict())
o_eager = torch.optim.Adam(m_eager.parameters(), lr=1e-2)
o_comp = torch.optim.Adam(m_comp.parameters(), lr=1e-2)


def train_step(model, opt, *batch):
    loss = ppo_loss(model, *batch)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.detach()


tracejit.reset()
step = tracejit.compile(train_step, backend=BACKEND)
for seed in (1, 2, 3):
    le, lc = train_step(m_eager, o_eager, *data(seed)), step(m_comp, o_comp, *data(seed))
    check(tensors_same(lc, le, rtol=1e-4, atol=1e-5), f"PPO training step: eager's loss (step {seed})")
check(tensors_same(list(m_comp.parameters()), list(m_eager.parameters()), rtol=1e-4, atol=1e-5),
      "PPO training step: eager's parameters after 3 steps")
check_equal(tracejit.counters()["graph_breaks"], 0, "PPO training step: no graph break")

# The checks fail as eager's: a NaN parameter (Normal's loc must be real),
# and a sample outside the support (a Categorical index out of range).


def log_prob_normal(loc, scale, x):
    d = Normal(loc, scale)
    return d.log_prob(x).sum()


def log_prob_categorical(logits, idx):
    return Categorical(logits=logits).log_prob(idx)


tracejit.reset()
lp_n = tracejit.compile(log_prob_normal, backend=BACKEND)
loc, scale, x = torch.zeros(4), torch.ones(4), torch.randn(4)
check(tensors_same(lp_n(loc, scale, x), log_prob_normal(loc, scale, x)), "Normal.log_prob: eager's value")
check_equal(counts(log_prob_normal, loc, scale, x)[:2], (1, 0), "Normal(loc, scale).log_prob: one graph, no break")
bad = torch.tensor([0.0, float("nan"), 0.0, 0.0])
check_raises(ValueError, lambda: log_prob_normal(bad, scale, x), "eager: a NaN loc raises ValueError")
e = check_raises(ValueError, lambda: lp_n(bad, scale, x), "compiled: a NaN loc raises ValueError, as eager")
check(e is not None and "valid.all()" in str(e), f"its message names the check: {e}")
check_raises(ValueError, lambda: lp_n(loc, -scale, x), "compiled: a negative scale raises ValueError, as eager")
check(tensors_same(lp_n(loc, scale, x), log_prob_normal(loc, scale, x)), "Normal.log_prob: eager's value again after")
check_equal(tracejit.counters()["recompiles"], 0, "the failing calls reused the compiled graph")

lp_c = tracejit.compile(log_prob_categorical, backend=BACKEND)
logits = torch.randn(5, 3)
idx = torch.tensor([0, 2, 1, 1, 0])
check(tensors_same(lp_c(logits, idx), log_prob_categorical(logits, idx)), "Categorical.log_prob: eager's value")
check_raises(ValueError, lambda: log_prob_categorical(logits, idx + 3), "eager: an index outside the support raises")
check_raises(ValueError, lambda: lp_c(logits, idx + 3), "compiled: an index outside the support raises ValueError")

# A later side effect is not replayed when the check fails (eager raised before it).


class Holder:
    pass


holder = Holder()


def log_prob_then_store(loc, x):
    lp = Normal(loc, torch.ones_like(loc)).log_prob(x)
    holder.last = lp
    return lp


tracejit.reset()
store = tracejit.compile(log_prob_then_store, backend=BACKEND)
store(loc, x)
check(hasattr(holder, "last") and tensors_same(holder.last, log_prob_then_store(loc, x)), "side effect replayed")
del holder.last
check_raises(ValueError, lambda: store(bad, x), "compiled: the NaN loc raises before the attribute write")
check(not hasattr(holder, "last"), "the attribute write after the failed check was not replayed (as eager)")

# A check inside the caller's try block: eager catches it; the graph breaks there.


def guarded(loc, x):
    try:
        lp = Normal(loc, torch.ones_like(loc)).log_prob(x)
    except ValueError:
        lp = torch.zeros_like(x)
    return lp + 1


tracejit.reset()
g = tracejit.compile(guarded, backend=BACKEND)
check(tensors_same(g(loc, x), guarded(loc, x)), "try around a validated distribution: eager's value")
check(tensors_same(g(bad, x), guarded(bad, x)), "try around a validated distribution: the except clause ran")

# lazy_property read under no_grad: computed under enable_grad, as its
# __get__ does (Categorical normalizes its logits in __init__, under no_grad
# here, so probs does not require grad in eager either).


def probs_no_grad(w):
    with torch.no_grad():
        return Categorical(logits=w).probs


w_eager = nn.Parameter(torch.randn(4))
w_comp = nn.Parameter(w_eager.detach().clone())
tracejit.reset()
pc, pe = tracejit.compile(probs_no_grad, backend=BACKEND)(w_comp), probs_no_grad(w_eager)
check(tensors_same(pc, pe), "Categorical(logits=w).probs under no_grad: eager's value")
check_equal(pc.requires_grad, pe.requires_grad, "Categorical(logits=w).probs under no_grad: requires_grad as eager")
check_equal(counts(probs_no_grad, w_comp)[:2], (1, 0), "probs under no_grad: one graph, no break")

finish()
