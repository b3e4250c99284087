"""Our own model programs, written in the style of common public ones (no
downloads): the idioms real code uses, as issue 42 lists them, in the
models issue 41 measures. Each program gives an inference function and a
whole training step (zero_grad, forward, loss, backward, clipping where
real code clips, optimizer step; schedulers where real code has one) in
the plain form a user writes and compiles with tracejit.compile.

A program is `PROGRAMS[name](scale)`: scale "test" keeps it small for the
test suite, "bench" gives shapes worth timing. It returns a Program:
  model                  the nn.Module
  infer_args             arguments of infer(model, *infer_args)
  infer                  the inference function (None: no inference form)
  make_state(dtype)      a fresh (model, optimizers, schedulers) copy for a
                         training run, its floating parameters in dtype
                         (float32 by default): deep copies, so eager and
                         compiled runs start equal
  train_step(state, batch) one training step; returns the loss(es)
  batches                the batches fed to train_step, one per step
Used by tests/models/check_zoo.py and tests/bench/models.py."""
import copy
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Program:
    model: nn.Module
    infer: Optional[Callable]
    infer_args: tuple
    make_state: Callable[[], Any]
    train_step: Callable
    batches: List[tuple] = field(default_factory=list)


def _sizes(scale, test, bench):
    return test if scale == "test" else bench


def _state(model, *optimizer_factories, scheduler=None):
    """make_state for one model: a deep copy of it and its optimizers (and
    a scheduler over the first), built fresh per call."""
    def make(dtype=torch.float32):
        m = copy.deepcopy(model).to(dtype)
        opts = [make_opt(m) for make_opt in optimizer_factories]
        scheds = [scheduler(opts[0])] if scheduler else []
        return m, opts, scheds
    return make


# ------------------------------------------------------------------ GPT

class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads, ctx, dropout=0.0):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("bias", torch.tril(torch.ones(ctx, ctx)).view(1, 1, ctx, ctx))

    def forward(self, x, pad_mask):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = att.masked_fill(pad_mask[:, None, None, :T] == 0, torch.tensor(-1e9))
        att = self.drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class GPTBlock(nn.Module):
    def __init__(self, dim, heads, ctx):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, ctx)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim), nn.Dropout(0.0))

    def forward(self, x, pad_mask):
        x = x + self.attn(self.ln_1(x), pad_mask)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab, ctx, dim, heads, layers):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(ctx, dim)
        self.h = nn.ModuleList([GPTBlock(dim, heads, ctx) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying

    def forward(self, idx, pad_mask):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x, pad_mask)
        return self.lm_head(self.ln_f(x))


def gpt(scale):
    vocab, ctx, dim, heads, layers, batch = _sizes(scale, (50, 16, 32, 4, 2, 4), (2000, 128, 256, 4, 4, 8))
    torch.manual_seed(0)
    model = GPT(vocab, ctx, dim, heads, layers)
    idx = torch.randint(0, vocab, (batch, ctx))
    pad = torch.ones(batch, ctx, dtype=torch.long)
    pad[0, ctx - 3:] = 0

    def infer(model, idx, pad):
        return model(idx, pad)

    def train_step(state, batch):
        model, (opt,), (sched,) = state
        idx, pad, targets = batch
        opt.zero_grad(set_to_none=True)
        logits = model(idx, pad)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        return loss

    batches = []
    for _ in range(3):
        i = torch.randint(0, vocab, (batch, ctx))
        t = torch.roll(i, -1, 1)
        t[:, -1] = -1
        batches.append((i, pad, t))
    make = _state(model, lambda m: torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.1),
                  scheduler=lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.9))
    return Program(model, infer, (idx, pad), make, train_step, batches)


# ----------------------------------------------------------------- BERT

class BertLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.d_k = heads, dim // heads
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.o = nn.Linear(dim, dim)
        self.ln1, self.ln2 = nn.LayerNorm(dim, eps=1e-12), nn.LayerNorm(dim, eps=1e-12)
        self.ff1, self.ff2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.heads, self.d_k).permute(0, 2, 1, 3)

    def forward(self, x, attn_mask):
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d_k) + attn_mask
        ctx = torch.matmul(scores.softmax(-1), v).permute(0, 2, 1, 3).flatten(2)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))


class Bert(nn.Module):
    def __init__(self, vocab, ctx, dim, heads, layers, classes):
        super().__init__()
        self.word = nn.Embedding(vocab, dim, padding_idx=0)
        self.position = nn.Embedding(ctx, dim)
        self.token_type = nn.Embedding(2, dim)
        self.ln = nn.LayerNorm(dim, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(dim, heads) for _ in range(layers)])
        self.classifier = nn.Linear(dim, classes)

    def forward(self, ids, attention_mask):
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.ln(self.word(ids) + self.position(positions) + self.token_type(torch.zeros_like(ids)))
        ext = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, ext)
        return F.log_softmax(self.classifier(x[:, 0]), dim=-1)


def bert(scale):
    vocab, ctx, dim, heads, layers, batch = _sizes(scale, (60, 12, 32, 4, 2, 4), (3000, 128, 256, 4, 4, 8))
    torch.manual_seed(1)
    model = Bert(vocab, ctx, dim, heads, layers, 3)
    ids = torch.randint(1, vocab, (batch, ctx))
    mask = torch.ones(batch, ctx, dtype=torch.long)
    mask[1, ctx // 2:] = 0

    def infer(model, ids, mask):
        return model(ids, mask)

    def train_step(state, batch):
        model, (opt,), _ = state
        ids, mask, labels = batch
        opt.zero_grad()
        loss = F.nll_loss(model(ids, mask), labels, reduction="mean")
        loss.backward()
        opt.step()
        return loss

    batches = [(torch.randint(1, vocab, (batch, ctx)), mask, torch.randint(0, 3, (batch,))) for _ in range(3)]
    make = _state(model, lambda m: torch.optim.Adam(m.parameters(), lr=1e-3))
    return Program(model, infer, (ids, mask), make, train_step, batches)


# ---------------------------------------------------- speech transformer

class ScaledDotProductAttention(nn.Module):
    def __init__(self, d_k):
        super().__init__()
        self.temperature = np.power(d_k, 0.5)

    def forward(self, q, k, v, mask):
        attn = torch.bmm(q, k.transpose(1, 2)) / self.temperature
        attn = attn.masked_fill(mask, -np.inf)
        return torch.bmm(F.softmax(attn, dim=2), v)


class SpeechEncoderLayer(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.heads, self.d_k = heads, d_model // heads
        self.w_qs, self.w_ks, self.w_vs = (nn.Linear(d_model, d_model) for _ in range(3))
        self.attention = ScaledDotProductAttention(self.d_k)
        self.fc = nn.Linear(d_model, d_model)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, 2 * d_model), nn.ReLU(), nn.Linear(2 * d_model, d_model))

    def forward(self, x, mask):
        b, t, _ = x.size()
        def heads(y):
            return y.view(b, t, self.heads, self.d_k).permute(2, 0, 1, 3).contiguous().view(-1, t, self.d_k)
        out = self.attention(heads(self.w_qs(x)), heads(self.w_ks(x)), heads(self.w_vs(x)),
                             mask.repeat(self.heads, 1, 1))
        out = out.view(self.heads, b, t, self.d_k).permute(1, 2, 0, 3).contiguous().view(b, t, -1)
        x = self.norm1(x + self.fc(out))
        return self.norm2(x + self.ff(x))


class SpeechTransformer(nn.Module):
    """A speech encoder: frame features, positional encoding, encoder
    layers, CTC-style per-frame logits."""

    def __init__(self, feats, d_model, heads, layers, vocab, max_len=512):
        super().__init__()
        self.input_proj = nn.Linear(feats, d_model)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1).float()
        div = torch.exp(torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model))
        pe[:, 0::2], pe[:, 1::2] = torch.sin(position * div), torch.cos(position * div)
        self.register_buffer("pe", pe.unsqueeze(0))
        self.x_scale = np.sqrt(d_model)
        self.layers = nn.ModuleList([SpeechEncoderLayer(d_model, heads) for _ in range(layers)])
        self.out = nn.Linear(d_model, vocab)

    def forward(self, feats, lengths):
        if feats.dim() != 3:
            warnings.warn("expected (batch, time, features)")
        t = feats.size(1)
        pad = torch.arange(t)[None, :] >= lengths[:, None]
        mask = pad.unsqueeze(1).expand(-1, t, -1)
        x = self.input_proj(feats) * self.x_scale + self.pe[:, :t]
        for layer in self.layers:
            x = layer(x, mask)
        return F.log_softmax(self.out(x), dim=-1)


def speech(scale):
    feats, d_model, heads, layers, vocab, batch, t = _sizes(scale, (8, 32, 4, 2, 10, 3, 20), (80, 256, 4, 4, 40, 8, 200))
    torch.manual_seed(2)
    model = SpeechTransformer(feats, d_model, heads, layers, vocab)
    x = torch.randn(batch, t, feats)
    lengths = torch.full((batch,), t, dtype=torch.long)
    lengths[0] = t - 4

    def infer(model, x, lengths):
        return model(x, lengths)

    def train_step(state, batch):
        model, (opt,), _ = state
        x, lengths, targets = batch
        opt.zero_grad()
        logp = model(x, lengths)
        loss = F.nll_loss(logp.transpose(1, 2), targets, reduction="mean")
        loss.backward()
        opt.step()
        return loss

    batches = [(torch.randn(batch, t, feats), lengths, torch.randint(0, vocab, (batch, t))) for _ in range(3)]
    make = _state(model, lambda m: torch.optim.Adam(m.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9))
    return Program(model, infer, (x, lengths), make, train_step, batches)


# ------------------------------------------------------------------ DLRM

class DLRM(nn.Module):
    def __init__(self, dense_in, table_rows, emb_dim, bottom, top):
        super().__init__()
        self.emb = nn.ModuleList([nn.EmbeddingBag(n, emb_dim, mode="sum") for n in table_rows])
        layers, d = [], dense_in
        for h in bottom:
            layers += [nn.Linear(d, h), nn.ReLU()]
            d = h
        self.bot = nn.Sequential(*layers)
        n = len(table_rows) + 1
        d = emb_dim + n * (n - 1) // 2
        layers = []
        for h in top:
            layers += [nn.Linear(d, h), nn.ReLU()]
            d = h
        layers += [nn.Linear(d, 1)]
        self.top = nn.Sequential(*layers)

    def interact(self, x, ly):
        batch, d = x.shape
        t = torch.cat([x] + ly, dim=1).view(batch, -1, d)
        z = torch.bmm(t, t.transpose(1, 2))
        _, ni, nj = z.shape
        li = torch.tensor([i for i in range(ni) for j in range(i)])
        lj = torch.tensor([j for i in range(nj) for j in range(i)])
        return torch.cat([x, z[:, li, lj]], dim=1)

    def forward(self, dense, indices, offsets):
        x = self.bot(dense)
        ly = [emb(indices[k], offsets[k]) for k, emb in enumerate(self.emb)]
        return torch.sigmoid(self.top(self.interact(x, ly)))


def dlrm(scale):
    dense_in, rows, emb_dim, bottom, top, batch, per_bag = _sizes(
        scale, (4, [20, 30, 10], 8, [16, 8], [16], 6, 3), (13, [10000, 20000, 5000, 8000], 64, [512, 256, 64], [512, 256], 128, 20))
    torch.manual_seed(3)
    model = DLRM(dense_in, rows, emb_dim, bottom, top)

    def batch_of():
        dense = torch.rand(batch, dense_in)
        idx = [torch.randint(0, n, (batch * per_bag,)) for n in rows]
        offs = [torch.arange(0, batch * per_bag, per_bag) for _ in rows]
        return dense, idx, offs, torch.randint(0, 2, (batch, 1)).float()

    dense, idx, offs, _ = batch_of()

    def infer(model, dense, idx, offs):
        return model(dense, idx, offs)

    def train_step(state, batch):
        model, (opt,), _ = state
        dense, idx, offs, y = batch
        opt.zero_grad()
        loss = F.binary_cross_entropy(model(dense, idx, offs), y)
        loss.backward()
        opt.step()
        return loss

    make = _state(model, lambda m: torch.optim.SGD(m.parameters(), lr=0.1))
    return Program(model, infer, (dense, idx, offs), make, train_step, [batch_of() for _ in range(3)])


# ------------------------------------------------------- graph network

class GraphConvolution(nn.Module):
    def __init__(self, fin, fout):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(fin, fout))
        self.bias = nn.Parameter(torch.empty(fout))
        stdv = 1.0 / math.sqrt(fout)
        self.weight.data.uniform_(-stdv, stdv)
        self.bias.data.uniform_(-stdv, stdv)

    def forward(self, x, adj):
        return torch.sparse.mm(adj, torch.mm(x, self.weight)) + self.bias


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super().__init__()
        self.gc1, self.gc2 = GraphConvolution(nfeat, nhid), GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        return F.log_softmax(self.gc2(x, adj), dim=1)


def gcn(scale):
    nodes, feats, hid, classes, edges = _sizes(scale, (20, 8, 16, 3, 60), (2700, 1433, 16, 7, 10000))
    torch.manual_seed(4)
    model = GCN(feats, hid, classes, 0.0)
    src, dst = torch.randint(0, nodes, (edges,)), torch.randint(0, nodes, (edges,))
    adj = torch.sparse_coo_tensor(torch.stack([src, dst]), torch.full((edges,), 0.5), (nodes, nodes)).coalesce()
    x = torch.randn(nodes, feats)
    labels = torch.randint(0, classes, (nodes,))

    def infer(model, x, adj):
        return model(x, adj)

    def train_step(state, batch):
        model, (opt,), _ = state
        x, adj, labels = batch
        opt.zero_grad()
        loss = F.nll_loss(model(x, adj), labels)
        loss.backward()
        opt.step()
        return loss

    make = _state(model, lambda m: torch.optim.Adam(m.parameters(), lr=0.01, weight_decay=5e-4))
    return Program(model, infer, (x, adj), make, train_step, [(x, adj, labels)] * 3)


# --------------------------------------------------------------- LSTM LM

class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nlayers, self.nhid = nlayers, nhid

    def forward(self, input, hidden):
        emb = self.encoder(input)
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(output).view(-1, self.decoder.out_features)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def lstm_lm(scale):
    ntoken, ninp, nhid, nlayers, bptt, bsz = _sizes(scale, (30, 16, 16, 2, 5, 3), (10000, 200, 200, 2, 35, 20))
    torch.manual_seed(5)
    model = RNNModel(ntoken, ninp, nhid, nlayers)
    data = torch.randint(0, ntoken, (bptt, bsz))
    hidden = model.init_hidden(bsz)

    def infer(model, data, hidden):
        return model(data, hidden)

    def train_step(state, batch):
        model, (opt,), _ = state
        data, targets, hidden = batch
        hidden = repackage_hidden(hidden)
        model.zero_grad()
        output, hidden = model(data, hidden)
        loss = F.nll_loss(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
        return loss

    batches = [(torch.randint(0, ntoken, (bptt, bsz)), torch.randint(0, ntoken, (bptt * bsz,)), hidden)
               for _ in range(3)]
    make = _state(model, lambda m: torch.optim.SGD(m.parameters(), lr=20.0))
    return Program(model, infer, (data, hidden), make, train_step, batches)


# -------------------------------------------------------------------- VAE

class VAE(nn.Module):
    def __init__(self, d_in, hidden, latent):
        super().__init__()
        self.fc1, self.fc21, self.fc22 = nn.Linear(d_in, hidden), nn.Linear(hidden, latent), nn.Linear(hidden, latent)
        self.fc3, self.fc4 = nn.Linear(latent, hidden), nn.Linear(hidden, d_in)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar, eps):
        return mu + eps * torch.exp(0.5 * logvar)

    def decode(self, z):
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

    def forward(self, x, eps):
        mu, logvar = self.encode(x.view(-1, self.fc1.in_features))
        return self.decode(self.reparameterize(mu, logvar, eps)), mu, logvar


def vae_loss(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, recon_x.size(1)), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def vae(scale):
    d_in, hidden, latent, batch = _sizes(scale, (64, 32, 8, 8), (784, 400, 20, 128))
    torch.manual_seed(6)
    model = VAE(d_in, hidden, latent)
    x, eps = torch.rand(batch, d_in), torch.randn(batch, latent)

    def infer(model, x, eps):
        return model(x, eps)

    def train_step(state, batch):
        model, (opt,), _ = state
        x, eps = batch
        opt.zero_grad()
        recon, mu, logvar = model(x, eps)
        loss = vae_loss(recon, x, mu, logvar)
        loss.backward()
        opt.step()
        return loss

    make = _state(model, lambda m: torch.optim.Adam(m.parameters(), lr=1e-3))
    return Program(model, infer, (x, eps), make, train_step,
                   [(torch.rand(batch, d_in), torch.randn(batch, latent)) for _ in range(3)])


# ------------------------------------------------------------------ DCGAN

class Generator(nn.Module):
    def __init__(self, nz, ngf, nc):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, nc, ndf):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, 1, 4, 1, 0, bias=False), nn.Sigmoid())

    def forward(self, x):
        return self.main(x).view(-1, 1).squeeze(1)


class GAN(nn.Module):
    def __init__(self, nz, ngf, ndf, nc):
        super().__init__()
        self.netG, self.netD = Generator(nz, ngf, nc), Discriminator(nc, ndf)


def dcgan(scale):
    nz, ngf, ndf, batch = _sizes(scale, (8, 4, 4, 4), (100, 64, 64, 64))
    torch.manual_seed(7)
    gan = GAN(nz, ngf, ndf, 3)
    z = torch.randn(batch, nz, 1, 1)

    def infer(gan, z):
        return gan.netD(gan.netG(z))

    def train_step(state, batch):
        gan, (optD, optG), _ = state
        real, noise = batch
        criterion = nn.BCELoss()
        netD, netG = gan.netD, gan.netG
        netD.zero_grad()
        label = torch.full((real.size(0),), 1.0, dtype=real.dtype)
        errD_real = criterion(netD(real), label)
        errD_real.backward()
        fake = netG(noise)
        label.fill_(0.0)
        errD_fake = criterion(netD(fake.detach()), label)
        errD_fake.backward()
        optD.step()
        netG.zero_grad()
        label.fill_(1.0)
        errG = criterion(netD(fake), label)
        errG.backward()
        optG.step()
        return errD_real + errD_fake, errG

    make = _state(gan, lambda g: torch.optim.Adam(g.netD.parameters(), lr=2e-4, betas=(0.5, 0.999)),
                  lambda g: torch.optim.Adam(g.netG.parameters(), lr=2e-4, betas=(0.5, 0.999)))
    batches = [(torch.rand(batch, 3, 32, 32) * 2 - 1, torch.randn(batch, nz, 1, 1)) for _ in range(3)]
    return Program(gan, infer, (z,), make, train_step, batches)


# ------------------------------------------------------------------- UNet

class DoubleConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.double_conv = nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    def forward(self, x):
        return self.double_conv(x)


class Up(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = DoubleConv(cin, cout)

    def forward(self, x1, x2):
        x1 = F.interpolate(x1, scale_factor=2, mode="bilinear", align_corners=True)
        dy, dx = x2.size()[2] - x1.size()[2], x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
        return self.conv(torch.cat([x2, x1], dim=1))


class UNet(nn.Module):
    def __init__(self, channels, classes, base):
        super().__init__()
        b = base
        self.inc = DoubleConv(channels, b)
        self.downs = nn.ModuleList([DoubleConv(b, 2 * b), DoubleConv(2 * b, 4 * b), DoubleConv(4 * b, 4 * b)])
        self.ups = nn.ModuleList([Up(8 * b, 2 * b), Up(4 * b, b), Up(2 * b, b)])
        self.outc = nn.Conv2d(b, classes, kernel_size=1)

    def forward(self, x):
        skips = [self.inc(x)]
        for down in self.downs:
            skips.append(down(F.max_pool2d(skips[-1], 2)))
        x = skips.pop()
        for up in self.ups:
            x = up(x, skips.pop())
        return self.outc(x)


def unet(scale):
    base, batch, hw = _sizes(scale, (4, 2, 16), (16, 4, 128))
    torch.manual_seed(8)
    model = UNet(3, 2, base)
    x = torch.randn(batch, 3, hw, hw)

    def infer(model, x):
        return model(x)

    def train_step(state, batch):
        model, (opt,), _ = state
        x, target = batch
        opt.zero_grad()
        loss = F.cross_entropy(model(x), target)
        loss.backward()
        opt.step()
        return loss

    make = _state(model, lambda m: torch.optim.RMSprop(m.parameters(), lr=1e-4, weight_decay=1e-8, momentum=0.9))
    batches = [(torch.randn(batch, 3, hw, hw), torch.randint(0, 2, (batch, hw, hw))) for _ in range(3)]
    return Program(model, infer, (x,), make, train_step, batches)


# ------------------------------------------------------------ actor-critic

class ActorCritic(nn.Module):
    def __init__(self, obs, actions, hidden):
        super().__init__()
        self.affine = nn.Linear(obs, hidden)
        self.action_head = nn.Linear(hidden, actions)
        self.value_head = nn.Linear(hidden, 1)

    def forward(self, x):
        x = F.relu(self.affine(x))
        return F.softmax(self.action_head(x), dim=-1), self.value_head(x)


def actor_critic(scale):
    obs, actions, hidden, steps = _sizes(scale, (4, 2, 32, 10), (64, 8, 256, 200))
    torch.manual_seed(9)
    model = ActorCritic(obs, actions, hidden)
    states = torch.randn(steps, obs)
    gamma, eps = 0.99, np.finfo(np.float32).eps.item()

    def infer(model, states):
        return model(states)

    def train_step(state, batch):
        model, (opt,), _ = state
        states, taken, rewards = batch
        probs, values = model(states)
        returns, R = [], 0.0
        for r in rewards.tolist()[::-1]:
            R = r + gamma * R
            returns.insert(0, R)
        returns = torch.tensor(returns)
        returns = (returns - returns.mean()) / (returns.std() + eps)
        log_probs = torch.log(probs.gather(1, taken[:, None]).squeeze(1))
        advantage = returns - values.squeeze(1).detach()
        policy_loss = -(log_probs * advantage).sum()
        value_loss = F.smooth_l1_loss(values.squeeze(1), returns, reduction="sum")
        opt.zero_grad()
        loss = policy_loss + value_loss
        loss.backward()
        opt.step()
        return loss

    batches = [(torch.randn(steps, obs), torch.randint(0, actions, (steps,)), torch.rand(steps)) for _ in range(3)]
    make = _state(model, lambda m: torch.optim.Adam(m.parameters(), lr=3e-2))
    return Program(model, infer, (states,), make, train_step, batches)


PROGRAMS = {
    "gpt": gpt, "bert": bert, "speech_transformer": speech, "dlrm": dlrm, "gcn": gcn,
    "lstm_lm": lstm_lm, "vae": vae, "dcgan": dcgan, "unet": unet, "actor_critic": actor_critic,
}
