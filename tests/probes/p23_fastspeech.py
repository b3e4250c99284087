# FastSpeech2 / Tacotron-style TTS: sinusoid table from numpy (get_sinusoid_encoding_table) as a
# FloatTensor buffer, get_mask_from_lengths with torch.arange(0, max_len).unsqueeze(0).expand, masked_fill,
# VariancePredictor (Conv1d on transposed inputs, OrderedDict Sequential), LengthRegulator with a Python loop
# over durations (expand + torch.cat + pad), ScaledDotProductAttention with np.power(d_k, 0.5)
from collections import OrderedDict
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F
from harness import run

def get_sinusoid_encoding_table(n_position, d_hid, padding_idx=None):
    def cal_angle(position, hid_idx):
        return position / np.power(10000, 2 * (hid_idx // 2) / d_hid)
    def get_posi_angle_vec(position):
        return [cal_angle(position, hid_j) for hid_j in range(d_hid)]
    sinusoid_table = np.array([get_posi_angle_vec(pos_i) for pos_i in range(n_position)])
    sinusoid_table[:, 0::2] = np.sin(sinusoid_table[:, 0::2])
    sinusoid_table[:, 1::2] = np.cos(sinusoid_table[:, 1::2])
    if padding_idx is not None:
        sinusoid_table[padding_idx] = 0.0
    return torch.FloatTensor(sinusoid_table)

def get_mask_from_lengths(lengths, max_len=None):
    batch_size = lengths.shape[0]
    if max_len is None:
        max_len = torch.max(lengths).item()
    ids = torch.arange(0, max_len).unsqueeze(0).expand(batch_size, -1).to(lengths.device)
    mask = ids >= lengths.unsqueeze(1).expand(-1, max_len)
    return mask

def pad(input_ele, mel_max_length=None):
    if mel_max_length:
        max_len = mel_max_length
    else:
        max_len = max([input_ele[i].size(0) for i in range(len(input_ele))])
    out_list = list()
    for i, batch in enumerate(input_ele):
        one_batch_padded = F.pad(batch, (0, 0, 0, max_len - batch.size(0)), "constant", 0.0)
        out_list.append(one_batch_padded)
    return torch.stack(out_list)

class ScaledDotProductAttention(nn.Module):
    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature
        self.softmax = nn.Softmax(dim=2)
    def forward(self, q, k, v, mask=None):
        attn = torch.bmm(q, k.transpose(1, 2))
        attn = attn / self.temperature
        if mask is not None:
            attn = attn.masked_fill(mask, -np.inf)
        attn = self.softmax(attn)
        output = torch.bmm(attn, v)
        return output, attn

class MultiHeadAttention(nn.Module):
    def __init__(self, n_head, d_model, d_k, d_v, dropout=0.1):
        super().__init__()
        self.n_head, self.d_k, self.d_v = n_head, d_k, d_v
        self.w_qs = nn.Linear(d_model, n_head * d_k)
        self.w_ks = nn.Linear(d_model, n_head * d_k)
        self.w_vs = nn.Linear(d_model, n_head * d_v)
        self.attention = ScaledDotProductAttention(temperature=np.power(d_k, 0.5))
        self.layer_norm = nn.LayerNorm(d_model)
        self.fc = nn.Linear(n_head * d_v, d_model)
        self.dropout = nn.Dropout(dropout)
    def forward(self, q, k, v, mask=None):
        d_k, d_v, n_head = self.d_k, self.d_v, self.n_head
        sz_b, len_q, _ = q.size()
        sz_b, len_k, _ = k.size()
        sz_b, len_v, _ = v.size()
        residual = q
        q = self.w_qs(q).view(sz_b, len_q, n_head, d_k)
        k = self.w_ks(k).view(sz_b, len_k, n_head, d_k)
        v = self.w_vs(v).view(sz_b, len_v, n_head, d_v)
        q = q.permute(2, 0, 1, 3).contiguous().view(-1, len_q, d_k)
        k = k.permute(2, 0, 1, 3).contiguous().view(-1, len_k, d_k)
        v = v.permute(2, 0, 1, 3).contiguous().view(-1, len_v, d_v)
        mask = mask.repeat(n_head, 1, 1)
        output, attn = self.attention(q, k, v, mask=mask)
        output = output.view(n_head, sz_b, len_q, d_v)
        output = output.permute(1, 2, 0, 3).contiguous().view(sz_b, len_q, -1)
        output = self.dropout(self.fc(output))
        output = self.layer_norm(output + residual)
        return output, attn

class Conv(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size=1, stride=1, padding=0, dilation=1, bias=True, w_init="linear"):
        super(Conv, self).__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, bias=bias)
    def forward(self, x):
        x = x.contiguous().transpose(1, 2)
        x = self.conv(x)
        x = x.contiguous().transpose(1, 2)
        return x

class VariancePredictor(nn.Module):
    def __init__(self, d, k=3):
        super(VariancePredictor, self).__init__()
        self.conv_layer = nn.Sequential(OrderedDict([
            ("conv1d_1", Conv(d, d, kernel_size=k, padding=(k - 1) // 2)), ("relu_1", nn.ReLU()),
            ("layer_norm_1", nn.LayerNorm(d)), ("dropout_1", nn.Dropout(0.5)),
            ("conv1d_2", Conv(d, d, kernel_size=k, padding=1)), ("relu_2", nn.ReLU()),
            ("layer_norm_2", nn.LayerNorm(d)), ("dropout_2", nn.Dropout(0.5))]))
        self.linear_layer = nn.Linear(d, 1)
    def forward(self, encoder_output, mask):
        out = self.conv_layer(encoder_output)
        out = self.linear_layer(out)
        out = out.squeeze(-1)
        if mask is not None:
            out = out.masked_fill(mask, 0.0)
        return out

class LengthRegulator(nn.Module):
    def LR(self, x, duration, max_len):
        output = list()
        mel_len = list()
        for batch, expand_target in zip(x, duration):
            expanded = self.expand(batch, expand_target)
            output.append(expanded)
            mel_len.append(expanded.shape[0])
        if max_len is not None:
            output = pad(output, max_len)
        else:
            output = pad(output)
        return output, torch.LongTensor(mel_len).to(x.device)
    def expand(self, batch, predicted):
        out = list()
        for i, vec in enumerate(batch):
            expand_size = predicted[i].item()
            out.append(vec.expand(max(int(expand_size), 0), -1))
        out = torch.cat(out, 0)
        return out
    def forward(self, x, duration, max_len):
        output, mel_len = self.LR(x, duration, max_len)
        return output, mel_len

class TinyFastSpeech(nn.Module):
    def __init__(self, n_vocab=20, d=16, n_mel=8, max_seq_len=64):
        super().__init__()
        self.src_word_emb = nn.Embedding(n_vocab, d, padding_idx=0)
        self.position_enc = nn.Parameter(get_sinusoid_encoding_table(max_seq_len + 1, d).unsqueeze(0), requires_grad=False)
        self.slf_attn = MultiHeadAttention(2, d, d // 2, d // 2)
        self.duration_predictor = VariancePredictor(d)
        self.length_regulator = LengthRegulator()
        self.mel_linear = nn.Linear(d, n_mel)
    def forward(self, texts, src_lens, max_src_len, d_targets, max_mel_len):
        src_masks = get_mask_from_lengths(src_lens, max_src_len)
        batch_size, max_len = texts.shape[0], texts.shape[1]
        slf_attn_mask = src_masks.unsqueeze(1).expand(-1, max_len, -1)
        enc = self.src_word_emb(texts) + self.position_enc[:, :max_len, :].expand(batch_size, -1, -1)
        enc, _ = self.slf_attn(enc, enc, enc, mask=slf_attn_mask)
        enc = enc.masked_fill(src_masks.unsqueeze(-1), 0)
        log_duration_prediction = self.duration_predictor(enc, src_masks)
        x, mel_lens = self.length_regulator(enc, d_targets, max_mel_len)
        mel_masks = get_mask_from_lengths(mel_lens, max_mel_len)
        return self.mel_linear(x), log_duration_prediction, src_masks, mel_masks

torch.manual_seed(0)
texts = torch.randint(1, 20, (2, 6)); src_lens = torch.tensor([6, 4]); d_targets = torch.randint(1, 3, (2, 6))
d_targets[1, 4:] = 0
mel_t = torch.randn(2, 20, 8)
m = TinyFastSpeech()
def fs_loss(m, texts, src_lens, max_src_len, d_targets, max_mel_len):
    mel, log_d, src_masks, mel_masks = m(texts, src_lens, max_src_len, d_targets, max_mel_len)
    src_masks = ~src_masks; mel_masks = ~mel_masks
    log_duration_targets = torch.log(d_targets.float() + 1)
    log_d = log_d.masked_select(src_masks); log_duration_targets = log_duration_targets.masked_select(src_masks)
    mel = mel.masked_select(mel_masks.unsqueeze(-1)); tgt = mel_t.masked_select(mel_masks.unsqueeze(-1))
    return nn.L1Loss()(mel, tgt) + nn.MSELoss()(log_d, log_duration_targets)
run("fastspeech", m, (texts, src_lens, 6, d_targets, 20), fs_loss)
