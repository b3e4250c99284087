# Tacotron-style attention decoder loop (LSTMCell, location-sensitive attention, prenet w/ dropout in eval)
import torch, torch.nn as nn, torch.nn.functional as F
from harness import run

class Prenet(nn.Module):
    def __init__(self, in_dim, sizes):
        super().__init__()
        in_sizes = [in_dim] + sizes[:-1]
        self.layers = nn.ModuleList([nn.Linear(i, o, bias=False) for (i, o) in zip(in_sizes, sizes)])
    def forward(self, x):
        for linear in self.layers:
            x = F.dropout(F.relu(linear(x)), p=0.5, training=False)
        return x

class Attention(nn.Module):
    def __init__(self, rnn_dim, emb_dim, att_dim, n_filters=4, ksize=5):
        super().__init__()
        self.query_layer = nn.Linear(rnn_dim, att_dim, bias=False)
        self.memory_layer = nn.Linear(emb_dim, att_dim, bias=False)
        self.v = nn.Linear(att_dim, 1, bias=False)
        self.location_conv = nn.Conv1d(2, n_filters, ksize, padding=(ksize - 1) // 2, bias=False)
        self.location_dense = nn.Linear(n_filters, att_dim, bias=False)
        self.score_mask_value = -float("inf")
    def forward(self, query, memory, processed_memory, att_cat, mask):
        pq = self.query_layer(query.unsqueeze(1))
        loc = self.location_dense(self.location_conv(att_cat).transpose(1, 2))
        energies = self.v(torch.tanh(pq + loc + processed_memory)).squeeze(-1)
        if mask is not None:
            energies.data.masked_fill_(mask, self.score_mask_value)
        w = F.softmax(energies, dim=1)
        ctx = torch.bmm(w.unsqueeze(1), memory).squeeze(1)
        return ctx, w

class Decoder(nn.Module):
    def __init__(self, n_mel=8, emb=16, rnn=24, att=12, max_steps=6):
        super().__init__()
        self.n_mel = n_mel; self.rnn = rnn; self.emb = emb; self.max_decoder_steps = max_steps
        self.prenet = Prenet(n_mel, [16, 16])
        self.attention_rnn = nn.LSTMCell(16 + emb, rnn)
        self.attention_layer = Attention(rnn, emb, att)
        self.decoder_rnn = nn.LSTMCell(rnn + emb, rnn)
        self.linear_projection = nn.Linear(rnn + emb, n_mel)
        self.gate_layer = nn.Linear(rnn + emb, 1)
    def forward(self, memory, lengths):
        B, T, _ = memory.shape
        mask = torch.arange(0, T, device=memory.device)[None, :] >= lengths[:, None]
        dec_in = memory.new_zeros(B, self.n_mel)
        ah = memory.new_zeros(B, self.rnn); ac = memory.new_zeros(B, self.rnn)
        dh = memory.new_zeros(B, self.rnn); dc = memory.new_zeros(B, self.rnn)
        aw = memory.new_zeros(B, T); awc = memory.new_zeros(B, T); ctx = memory.new_zeros(B, self.emb)
        pm = self.attention_layer.memory_layer(memory)
        mels, gates, aligns = [], [], []
        while len(mels) < self.max_decoder_steps:
            x = self.prenet(dec_in)
            ah, ac = self.attention_rnn(torch.cat((x, ctx), -1), (ah, ac))
            att_cat = torch.cat((aw.unsqueeze(1), awc.unsqueeze(1)), dim=1)
            ctx, aw = self.attention_layer(ah, memory, pm, att_cat, mask)
            awc = awc + aw
            dh, dc = self.decoder_rnn(torch.cat((ah, ctx), -1), (dh, dc))
            hc = torch.cat((dh, ctx), dim=1)
            mel = self.linear_projection(hc); gate = self.gate_layer(hc)
            mels += [mel.squeeze(1)]; gates += [gate.squeeze(1)]; aligns += [aw]
            dec_in = mel
        mel_outputs = torch.stack(mels).transpose(0, 1).contiguous()
        gate_outputs = torch.stack(gates).transpose(0, 1).contiguous()
        return mel_outputs, gate_outputs, torch.stack(aligns).transpose(0, 1)

torch.manual_seed(0)
m = Decoder(); mem = torch.randn(2, 7, 16); lens = torch.tensor([7, 5])
tgt = torch.randn(2, 6, 8); gt = torch.zeros(2, 6); gt[:, -1] = 1
def loss_fn(model, mem, lens):
    mel, gate, _ = model(mem, lens)
    return nn.MSELoss()(mel, tgt) + nn.BCEWithLogitsLoss()(gate, gt)
run("tacotron", m, (mem, lens), loss_fn, lambda p: torch.optim.Adam(p, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=1e-6))
