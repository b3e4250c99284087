# DDPM-style UNet with sinusoidal timestep embeddings, GroupNorm, attention; training = noise prediction
import math, torch, torch.nn as nn, torch.nn.functional as F
from harness import run

def get_timestep_embedding(timesteps, embedding_dim):
    assert len(timesteps.shape) == 1
    half_dim = embedding_dim // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = torch.exp(torch.arange(half_dim, dtype=torch.float32) * -emb)
    emb = emb.to(device=timesteps.device)
    emb = timesteps.float()[:, None] * emb[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1)
    if embedding_dim % 2 == 1:
        emb = torch.nn.functional.pad(emb, (0, 1, 0, 0))
    return emb

def Normalize(c):
    return torch.nn.GroupNorm(num_groups=4, num_channels=c, eps=1e-6, affine=True)

def nonlinearity(x):
    return x * torch.sigmoid(x)

class ResnetBlock(nn.Module):
    def __init__(self, *, in_channels, out_channels=None, temb_channels=32, dropout=0.0):
        super().__init__()
        out_channels = in_channels if out_channels is None else out_channels
        self.in_channels, self.out_channels = in_channels, out_channels
        self.norm1 = Normalize(in_channels); self.conv1 = nn.Conv2d(in_channels, out_channels, 3, 1, 1)
        self.temb_proj = nn.Linear(temb_channels, out_channels)
        self.norm2 = Normalize(out_channels); self.dropout = nn.Dropout(dropout); self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1)
        if in_channels != out_channels:
            self.nin_shortcut = nn.Conv2d(in_channels, out_channels, 1)
    def forward(self, x, temb):
        h = self.conv1(nonlinearity(self.norm1(x)))
        h = h + self.temb_proj(nonlinearity(temb))[:, :, None, None]
        h = self.conv2(self.dropout(nonlinearity(self.norm2(h))))
        if self.in_channels != self.out_channels:
            x = self.nin_shortcut(x)
        return x + h

class AttnBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm = Normalize(c); self.q = nn.Conv2d(c, c, 1); self.k = nn.Conv2d(c, c, 1); self.v = nn.Conv2d(c, c, 1); self.proj_out = nn.Conv2d(c, c, 1)
    def forward(self, x):
        h_ = self.norm(x); q, k, v = self.q(h_), self.k(h_), self.v(h_)
        b, c, h, w = q.shape
        q = q.reshape(b, c, h * w).permute(0, 2, 1); k = k.reshape(b, c, h * w)
        w_ = torch.bmm(q, k) * (int(c) ** (-0.5))
        w_ = F.softmax(w_, dim=2)
        v = v.reshape(b, c, h * w); h_ = torch.bmm(v, w_.permute(0, 2, 1)).reshape(b, c, h, w)
        return x + self.proj_out(h_)

class UNet(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.ch = ch; self.temb_ch = 32
        self.temb = nn.Module()
        self.temb.dense = nn.ModuleList([nn.Linear(ch, 32), nn.Linear(32, 32)])
        self.conv_in = nn.Conv2d(3, ch, 3, 1, 1)
        self.down = ResnetBlock(in_channels=ch, out_channels=2 * ch)
        self.downsample = nn.Conv2d(2 * ch, 2 * ch, 3, 2, 0)
        self.mid = nn.ModuleDict({"block_1": ResnetBlock(in_channels=2 * ch), "attn_1": AttnBlock(2 * ch)})
        self.up = ResnetBlock(in_channels=4 * ch, out_channels=ch)
        self.norm_out = Normalize(ch); self.conv_out = nn.Conv2d(ch, 3, 3, 1, 1)
    def forward(self, x, t):
        temb = get_timestep_embedding(t, self.ch)
        temb = self.temb.dense[1](nonlinearity(self.temb.dense[0](temb)))
        h0 = self.conv_in(x)
        h1 = self.down(h0, temb)
        h = self.downsample(torch.nn.functional.pad(h1, (0, 1, 0, 1), mode="constant", value=0))
        h = self.mid["attn_1"](self.mid["block_1"](h, temb))
        h = torch.nn.functional.interpolate(h, scale_factor=2.0, mode="nearest")
        h = self.up(torch.cat([h, h1], dim=1), temb)
        return self.conv_out(nonlinearity(self.norm_out(h)))

class Diffusion(nn.Module):
    def __init__(self, T=100):
        super().__init__()
        self.model = UNet(); self.T = T
        betas = torch.linspace(1e-4, 0.02, T, dtype=torch.float64)
        alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.register_buffer("sqrt_alphas_cumprod", torch.sqrt(alphas_cumprod).float())
        self.register_buffer("sqrt_one_minus_alphas_cumprod", torch.sqrt(1.0 - alphas_cumprod).float())
    def q_sample(self, x_start, t, noise):
        def extract(a, t, x_shape):
            b, *_ = t.shape
            out = a.gather(-1, t)
            return out.reshape(b, *((1,) * (len(x_shape) - 1)))
        return extract(self.sqrt_alphas_cumprod, t, x_start.shape) * x_start + extract(self.sqrt_one_minus_alphas_cumprod, t, x_start.shape) * noise
    def forward(self, x, t):
        return self.model(x, t)

torch.manual_seed(0)
m = Diffusion(); x = torch.randn(2, 3, 8, 8); t = torch.tensor([3, 50])
def loss_fn(model, x, t):
    t = torch.randint(0, model.T, (x.shape[0],), device=x.device).long()
    noise = torch.randn_like(x)
    x_noisy = model.q_sample(x, t, noise)
    return F.mse_loss(noise, model(x_noisy, t))
run("diffusion", m, (x, t), loss_fn, lambda p: torch.optim.AdamW(p, lr=2e-4, weight_decay=0.0))
