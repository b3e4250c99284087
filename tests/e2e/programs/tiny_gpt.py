"""A tiny GPT: embedding, causal attention blocks, training steps with
AdamW, then greedy and sampled generation with a growing token list:
identical transcripts under python3.11 and `tracejit --compile-all`."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(4)
VOCAB, CTX, DIM, HEADS = 11, 8, 16, 2


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.out = nn.Linear(DIM, DIM)
        self.register_buffer("mask", torch.tril(torch.ones(CTX, CTX)).view(1, 1, CTX, CTX))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = [t.view(B, T, HEADS, C // HEADS).transpose(1, 2) for t in (q, k, v)]
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // HEADS)
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf")).softmax(dim=-1)
        return self.out((att @ v).transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.attn = Attention()
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Parameter(torch.zeros(1, CTX, DIM))
        self.blocks = nn.ModuleList([Block() for _ in range(2)])
        self.head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, idx, targets=None):
        x = self.tok(idx) + self.pos[:, : idx.shape[1]]
        for block in self.blocks:
            x = block(x)
        logits = self.head(x)
        loss = None if targets is None else F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
        return logits, loss


def generate(model, idx, steps, sample):
    for _ in range(steps):
        logits, _ = model(idx[:, -CTX:])
        probs = logits[:, -1, :].softmax(dim=-1)
        nxt = torch.multinomial(probs, 1) if sample else probs.argmax(dim=-1, keepdim=True)
        idx = torch.cat([idx, nxt], dim=1)
    return idx


def main():
    model = GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.randint(0, VOCAB, (4, CTX + 1))
    for step in range(5):
        _, loss = model(data[:, :-1], data[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("step", step, round(loss.item(), 5))
    model.eval()
    with torch.no_grad():
        start = torch.zeros(1, 1, dtype=torch.long)
        print("greedy", generate(model, start, 10, False).tolist())
        torch.manual_seed(5)
        print("sampled", generate(model, start, 10, True).tolist())


main()
