# NeRF MLP with positional encoding (embedder built from lambdas), ray sampling & volume rendering
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F
from harness import run

class Embedder:
    def __init__(self, **kwargs):
        self.kwargs = kwargs; self.create_embedding_fn()
    def create_embedding_fn(self):
        embed_fns = []; d = self.kwargs['input_dims']; out_dim = 0
        if self.kwargs['include_input']:
            embed_fns.append(lambda x: x); out_dim += d
        max_freq = self.kwargs['max_freq_log2']; N_freqs = self.kwargs['num_freqs']
        freq_bands = 2. ** torch.linspace(0., max_freq, steps=N_freqs)
        for freq in freq_bands:
            for p_fn in self.kwargs['periodic_fns']:
                embed_fns.append(lambda x, p_fn=p_fn, freq=freq: p_fn(x * freq))
                out_dim += d
        self.embed_fns = embed_fns; self.out_dim = out_dim
    def embed(self, inputs):
        return torch.cat([fn(inputs) for fn in self.embed_fns], -1)

def get_embedder(multires):
    e = Embedder(include_input=True, input_dims=3, max_freq_log2=multires - 1, num_freqs=multires, log_sampling=True, periodic_fns=[torch.sin, torch.cos])
    return (lambda x, eo=e: eo.embed(x)), e.out_dim

class NeRF(nn.Module):
    def __init__(self, D=4, W=32, skips=[2]):
        super().__init__()
        self.embed_fn, ch = get_embedder(4)
        self.embeddirs_fn, chv = get_embedder(2)
        self.skips = skips
        self.pts_linears = nn.ModuleList([nn.Linear(ch, W)] + [nn.Linear(W, W) if i not in self.skips else nn.Linear(W + ch, W) for i in range(D - 1)])
        self.views_linears = nn.ModuleList([nn.Linear(chv + W, W // 2)])
        self.feature_linear = nn.Linear(W, W); self.alpha_linear = nn.Linear(W, 1); self.rgb_linear = nn.Linear(W // 2, 3)
    def forward(self, rays_o, rays_d, near=2., far=6., N_samples=8):
        t_vals = torch.linspace(0., 1., steps=N_samples)
        z_vals = near * (1. - t_vals) + far * (t_vals)
        z_vals = z_vals.expand([rays_o.shape[0], N_samples])
        pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
        viewdirs = rays_d / torch.norm(rays_d, dim=-1, keepdim=True)
        input_pts = self.embed_fn(pts.reshape(-1, 3))
        input_views = self.embeddirs_fn(viewdirs[:, None].expand(pts.shape).reshape(-1, 3))
        h = input_pts
        for i, l in enumerate(self.pts_linears):
            h = F.relu(self.pts_linears[i](h))
            if i in self.skips:
                h = torch.cat([input_pts, h], -1)
        alpha = self.alpha_linear(h); feature = self.feature_linear(h)
        h = torch.cat([feature, input_views], -1)
        for i, l in enumerate(self.views_linears):
            h = F.relu(self.views_linears[i](h))
        raw = torch.cat([self.rgb_linear(h), alpha], -1).reshape(list(pts.shape[:-1]) + [4])
        raw2alpha = lambda raw, dists, act_fn=F.relu: 1. - torch.exp(-act_fn(raw) * dists)
        dists = z_vals[..., 1:] - z_vals[..., :-1]
        dists = torch.cat([dists, torch.Tensor([1e10]).expand(dists[..., :1].shape)], -1)
        dists = dists * torch.norm(rays_d[..., None, :], dim=-1)
        rgb = torch.sigmoid(raw[..., :3])
        alpha = raw2alpha(raw[..., 3], dists)
        weights = alpha * torch.cumprod(torch.cat([torch.ones((alpha.shape[0], 1)), 1. - alpha + 1e-10], -1), -1)[:, :-1]
        rgb_map = torch.sum(weights[..., None] * rgb, -2)
        depth_map = torch.sum(weights * z_vals, -1)
        disp_map = 1. / torch.max(1e-10 * torch.ones_like(depth_map), depth_map / torch.sum(weights, -1))
        return rgb_map, disp_map

img2mse = lambda x, y: torch.mean((x - y) ** 2)
mse2psnr = lambda x: -10. * torch.log(x) / torch.log(torch.Tensor([10.]))
torch.manual_seed(0)
m = NeRF(); ro = torch.randn(16, 3); rd = torch.randn(16, 3); target = torch.rand(16, 3)
def loss_fn(model, ro, rd):
    rgb, _ = model(ro, rd)
    loss = img2mse(rgb, target)
    psnr = mse2psnr(loss)
    return loss
run("nerf", m, (ro, rd), loss_fn, lambda p: torch.optim.Adam(params=p, lr=5e-4, betas=(0.9, 0.999)))
