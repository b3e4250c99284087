"""Issue 42: idioms of older public model code (NeRF, PointNet, wav2vec2's
positional convolution) traced without a graph break:
- the legacy constructors `torch.Tensor([1e10])`, `torch.FloatTensor([...])`,
  `torch.LongTensor(...)` of numbers (torch.tensor of the class's dtype;
  the default dtype for torch.Tensor) and `Variable(x)` (x.detach());
- `nn.utils.weight_norm` (aten::_weight_norm has no meta kernel in
  LibTorch 1.13), in inference and as a training step."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

import tracejit
from capture_util import expect
from e2e_util import BACKEND, check, check_equal, finish, tensors_same


def render(z_vals, rays_d):
    dists = z_vals[..., 1:] - z_vals[..., :-1]
    dists = torch.cat([dists, torch.Tensor([1e10]).expand(dists[..., :1].shape)], -1)
    psnr = -10. * torch.log(dists.mean()) / torch.log(torch.Tensor([10.]))
    return dists * torch.norm(rays_d[..., None, :], dim=-1), psnr


def stn_identity(x):
    batch = x.size()[0]
    iden = Variable(torch.FloatTensor([1, 0, 0, 0, 1, 0, 0, 0, 1])).view(1, 9).repeat(batch, 1)
    idx = torch.LongTensor([2, 0])
    return x + iden, idx, torch.DoubleTensor([0.5, 1.5]), torch.BoolTensor([True, False])


def detached(x):
    v = Variable(x * 2)
    w = Variable(x.sum(), requires_grad=True)
    return v, w


z = torch.linspace(2., 6., 8).expand(4, 8).contiguous()
rays = torch.randn(4, 3)
expect("torch.Tensor([1e10]) (NeRF)", render, (z, rays))
expect("Variable(torch.FloatTensor([...])) (PointNet)", stn_identity, (torch.randn(3, 9),))
x = torch.randn(3, 4, requires_grad=True)
ex = expect("Variable(x)", detached, (x,))
tracejit.reset()
v, w = tracejit.compile(detached, backend=BACKEND)(x)
check_equal((v.requires_grad, v.grad_fn, w.requires_grad, w.is_leaf), (False, None, True, True),
            "Variable(x): detached, requires_grad as asked")


class PosConv(nn.Module):
    def __init__(self, d=8, k=4):
        super().__init__()
        self.conv = nn.utils.weight_norm(nn.Conv1d(d, d, kernel_size=k, padding=k // 2, groups=2), name="weight", dim=2)
        self.lin = nn.utils.weight_norm(nn.Linear(d, 3))

    def forward(self, h):
        h = F.gelu(self.conv(h.transpose(1, 2))[:, :, :-1]).transpose(1, 2)
        return self.lin(h)


torch.manual_seed(0)
net = PosConv()
h = torch.randn(2, 10, 8)
with torch.no_grad():
    expect("weight_norm in inference", net, (h,))


def step(model, opt, h):
    loss = model(h).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.detach()


torch.manual_seed(0)
m_eager, m_comp = PosConv(), PosConv()
m_comp.load_state_dict(m_eager.state_dict())
o_eager = torch.optim.Adam(m_eager.parameters(), lr=1e-2)
o_comp = torch.optim.Adam(m_comp.parameters(), lr=1e-2)
tracejit.reset()
compiled = tracejit.compile(step, backend=BACKEND)
losses_e = [step(m_eager, o_eager, h) for _ in range(3)]
losses_c = [compiled(m_comp, o_comp, h) for _ in range(3)]
check(tensors_same(losses_c, losses_e, rtol=1e-4, atol=1e-5), "weight_norm training step: losses as eager")
check(tensors_same(list(m_comp.parameters()), list(m_eager.parameters()), rtol=1e-4, atol=1e-5),
      "weight_norm training step: parameters (weight_g, weight_v) as eager")
ex = tracejit.explain(step)(m_comp, o_comp, h)
check_equal((ex.graph_count, ex.graph_break_count), (1, 0),
            f"weight_norm training step: graphs/breaks ({[r.reason for r in ex.break_reasons]})")
finish()
