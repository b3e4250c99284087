# Mixtral-style sparse MoE with top-k routing (one_hot expert mask, torch.where, index_add_)
import torch, torch.nn as nn, torch.nn.functional as F
from harness import run

class Expert(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.w1 = nn.Linear(d, f, bias=False); self.w2 = nn.Linear(f, d, bias=False); self.w3 = nn.Linear(d, f, bias=False)
    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))

class SparseMoeBlock(nn.Module):
    def __init__(self, d=16, f=32, num_experts=4, top_k=2):
        super().__init__()
        self.hidden_dim = d; self.num_experts = num_experts; self.top_k = top_k
        self.gate = nn.Linear(d, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d, f) for _ in range(num_experts)])
    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final = torch.zeros((batch_size * sequence_length, hidden_dim), dtype=hidden_states.dtype, device=hidden_states.device)
        expert_mask = torch.nn.functional.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        return final.reshape(batch_size, sequence_length, hidden_dim), router_logits

class Dense(nn.Module):
    """Switch-style dense-dispatch variant: no data-dependent shapes."""
    def __init__(self, d=16, E=4, k=2):
        super().__init__()
        self.gate = nn.Linear(d, E); self.k = k
        self.experts = nn.ModuleList([Expert(d, 32) for _ in range(E)])
    def forward(self, x):
        logits = self.gate(x)
        topv, topi = logits.topk(self.k, dim=-1)
        w = torch.full_like(logits, float("-inf")).scatter(-1, topi, topv).softmax(-1)
        out = torch.stack([e(x) for e in self.experts], dim=-2)
        return (w.unsqueeze(-1) * out).sum(-2), logits

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.moe = SparseMoeBlock(); self.dense = Dense(); self.norm = nn.RMSNorm(16) if hasattr(nn, "RMSNorm") else nn.LayerNorm(16)
    def forward(self, x):
        h, l1 = self.moe(self.norm(x))
        h2, l2 = self.dense(x + h)
        return h2, l1

def load_balancing_loss_func(gate_logits, num_experts, top_k=2):
    routing_weights = F.softmax(gate_logits, dim=-1)
    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = F.one_hot(selected_experts, num_experts)
    tokens_per_expert = torch.mean(expert_mask.float(), dim=0)
    router_prob_per_expert = torch.mean(routing_weights, dim=0)
    return torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0)) * num_experts

torch.manual_seed(0)
m = Model(); x = torch.randn(2, 6, 16)
def loss_fn(model, x):
    y, logits = model(x)
    return y.pow(2).mean() + 0.01 * load_balancing_loss_func(logits, 4)
run("moe", m, (x,), loss_fn)
