# PyTorch's DQN tutorial style: epsilon-greedy select_action with random.random() and a global
# steps_done, a ReplayMemory (deque + random.sample), Transition namedtuple batches built with
# zip(*transitions), a non-final mask from a tuple of bools, gather / max(1)[0] on a target net,
# SmoothL1Loss, clip_grad_value_, and the soft update of the target net through state_dicts
import math, random
from collections import namedtuple, deque
import torch, torch.nn as nn, torch.nn.functional as F, torch.optim as optim
from harness import run, run_loop

Transition = namedtuple('Transition', ('state', 'action', 'next_state', 'reward'))

class ReplayMemory(object):
    def __init__(self, capacity):
        self.memory = deque([], maxlen=capacity)
    def push(self, *args):
        self.memory.append(Transition(*args))
    def sample(self, batch_size):
        return random.sample(self.memory, batch_size)
    def __len__(self):
        return len(self.memory)

class DQN(nn.Module):
    def __init__(self, n_observations, n_actions):
        super(DQN, self).__init__()
        self.layer1 = nn.Linear(n_observations, 32)
        self.layer2 = nn.Linear(32, 32)
        self.layer3 = nn.Linear(32, n_actions)
    def forward(self, x):
        x = F.relu(self.layer1(x))
        x = F.relu(self.layer2(x))
        return self.layer3(x)

BATCH_SIZE, GAMMA, EPS_START, EPS_END, EPS_DECAY, TAU = 8, 0.99, 0.9, 0.05, 1000, 0.005
n_obs, n_actions = 4, 2

def select_action(policy_net, state, steps):
    sample = random.random()
    eps_threshold = EPS_END + (EPS_START - EPS_END) * math.exp(-1. * steps / EPS_DECAY)
    if sample > eps_threshold:
        with torch.no_grad():
            return policy_net(state).max(1)[1].view(1, 1)
    else:
        return torch.tensor([[random.randrange(n_actions)]], dtype=torch.long)

def optimize_model(policy_net, target_net, optimizer, memory):
    if len(memory) < BATCH_SIZE:
        return None
    transitions = memory.sample(BATCH_SIZE)
    batch = Transition(*zip(*transitions))
    non_final_mask = torch.tensor(tuple(map(lambda s: s is not None, batch.next_state)), dtype=torch.bool)
    non_final_next_states = torch.cat([s for s in batch.next_state if s is not None])
    state_batch = torch.cat(batch.state)
    action_batch = torch.cat(batch.action)
    reward_batch = torch.cat(batch.reward)
    state_action_values = policy_net(state_batch).gather(1, action_batch)
    next_state_values = torch.zeros(BATCH_SIZE)
    with torch.no_grad():
        next_state_values[non_final_mask] = target_net(non_final_next_states).max(1)[0]
    expected_state_action_values = (next_state_values * GAMMA) + reward_batch
    criterion = nn.SmoothL1Loss()
    loss = criterion(state_action_values, expected_state_action_values.unsqueeze(1))
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
    optimizer.step()
    return loss.detach()

def env_step(state, action):  # a toy environment, deterministic in the state
    nxt = torch.tanh(state + (action.float() - 0.5) * 0.1)
    reward = torch.tensor([1.0]) if nxt.sum() > 0 else torch.tensor([0.0])
    done = bool(nxt.abs().max() > 0.95)
    return nxt, reward, done

def agent_step(st, obs):
    policy_net, target_net, optimizer, memory, counter = st
    action = select_action(policy_net, obs, counter[0])
    counter[0] += 1
    observation, reward, done = env_step(obs, action)
    next_state = None if done else observation
    memory.push(obs, action, next_state, reward)
    loss = optimize_model(policy_net, target_net, optimizer, memory)
    target_net_state_dict = target_net.state_dict()
    policy_net_state_dict = policy_net.state_dict()
    for key in policy_net_state_dict:
        target_net_state_dict[key] = policy_net_state_dict[key] * TAU + target_net_state_dict[key] * (1 - TAU)
    target_net.load_state_dict(target_net_state_dict)
    return action, loss

torch.manual_seed(0)
net = DQN(n_obs, n_actions)
obs = torch.randn(8, n_obs); acts = torch.randint(0, 2, (8, 1)); target = torch.randn(8)
run("dqn_net", net, (obs,), lambda m, s: F.smooth_l1_loss(m(s).gather(1, acts).squeeze(1), target),
    lambda p: optim.AdamW(p, lr=1e-4, amsgrad=True))

def make_state():
    torch.manual_seed(0)
    p = DQN(n_obs, n_actions); t = DQN(n_obs, n_actions); t.load_state_dict(p.state_dict())
    mem = ReplayMemory(100)
    g = torch.Generator().manual_seed(3)
    for _ in range(BATCH_SIZE):
        s = torch.randn(1, n_obs, generator=g)
        mem.push(s, torch.tensor([[0]]), s * 0.5, torch.tensor([1.0]))
    return (p, t, optim.AdamW(p.parameters(), lr=1e-4, amsgrad=True), mem, [0])
g = torch.Generator().manual_seed(4)
observations = [torch.randn(1, n_obs, generator=g) * 0.3 for _ in range(6)]
run_loop("dqn_agent_step", make_state, agent_step, observations)
