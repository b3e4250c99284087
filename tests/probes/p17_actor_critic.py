# pytorch/examples reinforcement_learning style: actor_critic (SavedAction namedtuple, saved_actions list,
# returns built backwards, eps from np.finfo, smooth_l1_loss(value, torch.tensor([R])), del lists)
# and reinforce (saved_log_probs, torch.cat(policy_loss).sum())
from collections import namedtuple
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F, torch.optim as optim
from torch.distributions import Categorical
from harness import run

SavedAction = namedtuple('SavedAction', ['log_prob', 'value'])
eps = np.finfo(np.float32).eps.item()
gamma = 0.99

class Policy(nn.Module):
    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(4, 32)
        self.action_head = nn.Linear(32, 2)
        self.value_head = nn.Linear(32, 1)
        self.saved_actions = []
        self.rewards = []
    def forward(self, x):
        x = F.relu(self.affine1(x))
        action_prob = F.softmax(self.action_head(x), dim=-1)
        state_values = self.value_head(x)
        return action_prob, state_values

def select_action(model, state):
    state = torch.from_numpy(state).float()
    probs, state_value = model(state)
    m = Categorical(probs)
    action = m.sample()
    model.saved_actions.append(SavedAction(m.log_prob(action), state_value))
    return action.item()

def normalized_returns(rewards):
    R = 0
    returns = []
    for r in rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    return (returns - returns.mean()) / (returns.std() + eps)

def finish_episode(model):
    saved_actions = model.saved_actions
    policy_losses = []
    value_losses = []
    returns = normalized_returns(model.rewards)
    for (log_prob, value), R in zip(saved_actions, returns):
        advantage = R - value.item()
        policy_losses.append(-log_prob * advantage)
        value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))
    loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
    del model.rewards[:]
    del model.saved_actions[:]
    return loss

torch.manual_seed(0)
states = [np.random.RandomState(i).randn(4).astype(np.float32) for i in range(5)]
def episode_loss(model, x):
    for i, s in enumerate(states):
        a = select_action(model, s)
        model.rewards.append(1.0 if a == 0 else 0.5)
    return finish_episode(model)
m = Policy()
x = torch.randn(5, 4)
run("actor_critic", m, (x,), episode_loss, lambda p: optim.Adam(p, lr=3e-2))

class Reinforce(nn.Module):
    def __init__(self):
        super(Reinforce, self).__init__()
        self.affine1 = nn.Linear(4, 32)
        self.dropout = nn.Dropout(p=0.6)
        self.affine2 = nn.Linear(32, 2)
        self.saved_log_probs = []
        self.rewards = []
    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)

def reinforce_loss(policy, x):
    for i in range(x.size(0)):
        state = x[i].unsqueeze(0)
        probs = policy(state)
        m = Categorical(probs)
        action = m.sample()
        policy.saved_log_probs.append(m.log_prob(action))
        policy.rewards.append(float(i % 2))
    policy_loss = []
    returns = normalized_returns(policy.rewards)
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    policy_loss = torch.cat(policy_loss).sum()
    del policy.rewards[:]
    del policy.saved_log_probs[:]
    return policy_loss
run("reinforce", Reinforce(), (x,), reinforce_loss, lambda p: optim.Adam(p, lr=1e-2))
