# wav2vec2-style conv feature extractor + pos conv + TransformerEncoder (batch_first) + CTC-free head
import math, torch, torch.nn as nn, torch.nn.functional as F
from harness import run

class ConvLayer(nn.Module):
    def __init__(self, i, o, k, s, gn=False):
        super().__init__()
        self.conv = nn.Conv1d(i, o, k, stride=s, bias=False)
        self.layer_norm = nn.GroupNorm(o, o, affine=True) if gn else None
    def forward(self, x):
        x = self.conv(x)
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        return F.gelu(x)

class FeatureExtractor(nn.Module):
    def __init__(self, conv_dim=(16, 16, 16), kernel=(10, 3, 3), stride=(5, 2, 2)):
        super().__init__()
        layers = [ConvLayer(1, conv_dim[0], kernel[0], stride[0], gn=True)]
        layers += [ConvLayer(conv_dim[i - 1], conv_dim[i], kernel[i], stride[i]) for i in range(1, len(conv_dim))]
        self.conv_layers = nn.ModuleList(layers)
        self._requires_grad = True
    def forward(self, input_values):
        hidden_states = input_values[:, None]
        if self._requires_grad and self.training:
            hidden_states.requires_grad = True
        for conv_layer in self.conv_layers:
            hidden_states = conv_layer(hidden_states)
        return hidden_states

class PosConv(nn.Module):
    def __init__(self, d, k=8, groups=4):
        super().__init__()
        self.conv = nn.Conv1d(d, d, kernel_size=k, padding=k // 2, groups=groups)
        self.conv = nn.utils.weight_norm(self.conv, name="weight", dim=2)
        self.num_pad_remove = 1 if k % 2 == 0 else 0
    def forward(self, h):
        h = h.transpose(1, 2)
        h = self.conv(h)
        if self.num_pad_remove > 0:
            h = h[:, :, : -self.num_pad_remove]
        return F.gelu(h).transpose(1, 2)

class Wav2Vec(nn.Module):
    def __init__(self, d=32, vocab=12):
        super().__init__()
        self.fe = FeatureExtractor()
        self.proj = nn.Sequential(nn.LayerNorm(16), nn.Linear(16, d))
        self.pos = PosConv(d)
        layer = nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, batch_first=True, activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.lm_head = nn.Linear(d, vocab)
    def _get_feat_extract_output_lengths(self, input_lengths):
        def _conv_out_length(input_length, kernel_size, stride):
            return torch.div(input_length - kernel_size, stride, rounding_mode="floor") + 1
        for k, s in zip((10, 3, 3), (5, 2, 2)):
            input_lengths = _conv_out_length(input_lengths, k, s)
        return input_lengths
    def forward(self, wav, wav_lens):
        f = self.fe(wav).transpose(1, 2)
        h = self.proj(f)
        h = h + self.pos(h)
        out_lens = self._get_feat_extract_output_lengths(wav_lens)
        pad = torch.arange(h.shape[1], device=h.device)[None, :] >= out_lens[:, None]
        h = self.encoder(h, src_key_padding_mask=pad)
        return self.lm_head(h).log_softmax(-1), out_lens

torch.manual_seed(0)
m = Wav2Vec(); wav = torch.randn(2, 400); lens = torch.tensor([400, 320])
tgt = torch.randint(1, 12, (2, 4)); tl = torch.tensor([4, 3])
def loss_fn(model, wav, lens):
    lp, ol = model(wav, lens)
    return F.ctc_loss(lp.transpose(0, 1), tgt, ol, tl, blank=0, zero_infinity=True)
run("wav2vec", m, (wav, lens), loss_fn)
