"""Issue 42: ops LibTorch 1.13 has no meta kernel for, traced with shape
rules (graph/meta_rules.cpp, graph/unbacked_sizes.cpp) instead of breaking:
- `torch.multinomial` and `Categorical.sample()` (an RL rollout step),
  drawing from the CPU generator as eager does;
- `torch.bincount` (a data-dependent size: max + 1, or minlength), with and
  without weights (float weights sum in float, others in double);
- `F.ctc_loss` with lengths given as lists, in inference and as a training
  step (its backward `_ctc_loss_backward`)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

import tracejit
from capture_util import expect, same
from e2e_util import check, check_equal, finish, BACKEND, tensors_same


def seeded(fn, seed=7):
    """fn with the generator seeded before it, so eager and compiled draw alike."""
    def run(*args):
        torch.manual_seed(seed)
        return fn(*args)
    return run


torch.manual_seed(0)
policy = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 4))
obs = torch.randn(5, 6)


def rollout(obs):
    with torch.no_grad():
        logits = policy(obs)
        dist = Categorical(logits=logits)
        action = dist.sample()
        return action, dist.log_prob(action), dist.entropy()


def draws(p):
    return torch.multinomial(p, 3), torch.multinomial(p[0], 6, replacement=True), p.multinomial(1).squeeze(-1)


probs = torch.rand(4, 5) + 0.1


for name, fn, args in [("Categorical.sample in a rollout", rollout, (obs,)), ("torch.multinomial", draws, (probs,))]:
    torch.manual_seed(3)
    want = fn(*args)
    tracejit.reset()
    compiled = tracejit.compile(fn, backend=BACKEND)
    torch.manual_seed(3)
    got = compiled(*args)
    check(same(got, want), f"{name}: first call draws eager's samples")
    torch.manual_seed(4)
    want = fn(*args)
    torch.manual_seed(4)
    got = compiled(*args)
    check(same(got, want), f"{name}: cached graph draws eager's samples")
    ex = tracejit.explain(seeded(fn))(*args)
    check_equal((ex.graph_count, ex.graph_break_count), (1, 0),
                f"{name}: graphs/breaks ({[r.reason for r in ex.break_reasons]})")

labels = torch.tensor([0, 2, 2, 5, 1, 2])
weights = torch.tensor([0.5, 1.0, 1.5, 2.0, 0.25, 1.0])


def counts(labels, weights):
    return (torch.bincount(labels), torch.bincount(labels, minlength=9), torch.bincount(labels, weights=weights),
            torch.bincount(labels, weights.double()), labels.bincount().float() / labels.numel())


ex = expect("torch.bincount", counts, (labels, weights))
tracejit.reset()
compiled = tracejit.compile(counts, backend=BACKEND)
compiled(labels, weights)
other = torch.tensor([7, 7, 0])
check(same(compiled(other, weights[:3]), counts(other, weights[:3])), "torch.bincount: other data, other size")
check(all(g.dtype == w.dtype for g, w in zip(compiled(labels, weights), counts(labels, weights))), "torch.bincount: dtypes as eager")

# CTC: log_probs [T, N, C]; lengths as lists (the IntList overload)
T, N, C = 12, 2, 6
torch.manual_seed(1)
encoder = nn.Linear(8, C)
feats = torch.randn(T, N, 8)
targets = torch.tensor([[1, 2, 2, 3], [4, 1, 5, 0]])


def ctc(feats, targets):
    lp = encoder(feats).log_softmax(-1)
    return F.ctc_loss(lp, targets, [T, T - 3], [4, 3], blank=0, reduction="mean", zero_infinity=True)


expect("F.ctc_loss with list lengths", ctc, (feats, targets))


def ctc_step(model, opt, feats, targets):
    lp = model(feats).log_softmax(-1)
    loss = F.ctc_loss(lp, targets, [T, T - 3], [4, 3], reduction="sum")
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.detach()


torch.manual_seed(2)
m_eager = nn.Linear(8, C)
m_comp = nn.Linear(8, C)
m_comp.load_state_dict(m_eager.state_dict())
o_eager = torch.optim.SGD(m_eager.parameters(), lr=0.05)
o_comp = torch.optim.SGD(m_comp.parameters(), lr=0.05)
tracejit.reset()
step = tracejit.compile(ctc_step, backend=BACKEND)
losses_e = [ctc_step(m_eager, o_eager, feats, targets) for _ in range(3)]
losses_c = [step(m_comp, o_comp, feats, targets) for _ in range(3)]
check(tensors_same(losses_c, losses_e, rtol=1e-4, atol=1e-5), "ctc_loss training step: losses as eager")
check(tensors_same(list(m_comp.parameters()), list(m_eager.parameters()), rtol=1e-4, atol=1e-5),
      "ctc_loss training step: parameters as eager")
ex = tracejit.explain(ctc_step)(m_comp, o_comp, feats, targets)
check_equal((ex.graph_count, ex.graph_break_count), (1, 0),
            f"ctc_loss training step: graphs/breaks ({[r.reason for r in ex.break_reasons]})")

finish()
