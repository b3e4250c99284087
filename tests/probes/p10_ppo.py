# PPO (CleanRL-style) Agent: layer_init with orthogonal, Categorical get_action_and_value, clipped loss
import numpy as np, torch, torch.nn as nn
from torch.distributions.categorical import Categorical
from harness import run

def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer

class Agent(nn.Module):
    def __init__(self, obs=8, act=4):
        super().__init__()
        self.critic = nn.Sequential(layer_init(nn.Linear(obs, 32)), nn.Tanh(), layer_init(nn.Linear(32, 32)), nn.Tanh(), layer_init(nn.Linear(32, 1), std=1.0))
        self.actor = nn.Sequential(layer_init(nn.Linear(obs, 32)), nn.Tanh(), layer_init(nn.Linear(32, 32)), nn.Tanh(), layer_init(nn.Linear(32, act), std=0.01))
    def get_value(self, x):
        return self.critic(x)
    def get_action_and_value(self, x, action=None):
        logits = self.actor(x)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)
    def forward(self, x):
        logits = self.actor(x)
        probs = Categorical(logits=logits)
        return probs.log_prob(logits.argmax(-1)), probs.entropy(), self.critic(x)

torch.manual_seed(0)
m = Agent(); obs = torch.randn(16, 8)
acts = torch.randint(0, 4, (16,)); old_lp = torch.randn(16) * 0.1 - 1.4; adv = torch.randn(16); ret = torch.randn(16); old_v = torch.randn(16)
clip_coef, ent_coef, vf_coef = 0.2, 0.01, 0.5
def loss_fn(agent, b_obs):
    _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs, acts.long())
    logratio = newlogprob - old_lp
    ratio = logratio.exp()
    with torch.no_grad():
        old_approx_kl = (-logratio).mean()
        approx_kl = ((ratio - 1) - logratio).mean()
        clipfrac = ((ratio - 1.0).abs() > clip_coef).float().mean().item()
    mb_adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    pg_loss1 = -mb_adv * ratio
    pg_loss2 = -mb_adv * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
    pg_loss = torch.max(pg_loss1, pg_loss2).mean()
    newvalue = newvalue.view(-1)
    v_loss_unclipped = (newvalue - ret) ** 2
    v_clipped = old_v + torch.clamp(newvalue - old_v, -clip_coef, clip_coef)
    v_loss = 0.5 * torch.max(v_loss_unclipped, (v_clipped - ret) ** 2).mean()
    return pg_loss - ent_coef * entropy.mean() + v_loss * vf_coef
run("ppo", m, (obs,), loss_fn, lambda p: torch.optim.Adam(p, lr=2.5e-4, eps=1e-5))

# rollout step: sample actions (multinomial)
import tracejit
def rollout(agent, x):
    with torch.no_grad():
        action, logprob, _, value = agent.get_action_and_value(x)
    return action, logprob, value.flatten()
tracejit.reset()
ex = tracejit.explain(rollout)(m, obs)
print(f"RESULT ppo rollout graphs={ex.graph_count} breaks={ex.graph_break_count}")
for r in ex.break_reasons: print("  REASON ppo rollout:", r.reason[:150], r.filename.split('/')[-1], r.lineno)
