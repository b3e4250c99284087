"""A wide sweep of the tensor API (functions, methods with keywords,
dtypes, reductions, in-place ops, broadcasting, masks, shapes in control
flow, seeded random ops): identical transcripts under python3.11 and
`tracejit --compile-all`."""
import torch
import torch.nn.functional as F


def show(name, t):
    if isinstance(t, torch.Tensor):
        print(name, t.dtype, tuple(t.shape), [round(v, 4) for v in t.double().flatten().tolist()[:6]])
    else:
        print(name, t)


def reductions(x):
    return (x.sum(dim=1, keepdim=True), x.mean(0), x.amax(dim=-1), x.std(dim=0), x.var(), x.prod(1),
            x.argmax(dim=1), x.cumsum(0), x.logsumexp(1), torch.max(x, 1)[0], x.min(dim=0).indices)


def shapes(x):
    b, c = x.shape
    y = x.view(c, b) if b != c else x.t()
    z = y.reshape(-1).unsqueeze(0).expand(2, -1).contiguous()
    parts = torch.chunk(z, 2, dim=1)
    w = torch.cat(parts, 0).permute(1, 0).flatten()
    return w, x.size(), x.size(1) * 2, x.numel(), x.dim(), x.T.shape


def dtypes(x):
    i = (x * 10).long()
    f = i.float() / 3
    h = f.to(torch.float64)
    bits = (i & 3) | 4
    return i, f.half().float(), h.sum(), bits, (i % 3 == 0), x.type_as(h).dtype


def in_place(x):
    y = x.clone()
    y.add_(1).mul_(2)
    y[y > 3] = 0
    y.clamp_(min=-1, max=2.5)
    y.masked_fill_(y == 0, -5)
    return y


def functional(x, w):
    a = F.relu(x) + F.gelu(x, approximate="tanh") + F.silu(x)
    b = F.softmax(x, dim=-1) * F.log_softmax(x, dim=0)
    c = F.linear(x, w, torch.ones(w.shape[0]))
    d = torch.where(x > 0, x, torch.zeros_like(x)) + torch.clamp(x, -0.5, 0.5)
    e = F.normalize(x, dim=1)
    return a, b, c, d, e, F.pad(x, (1, 1)), F.layer_norm(x, (x.shape[-1],))


def randomness(x):
    torch.manual_seed(7)
    a = torch.rand_like(x)
    b = torch.randn(3)
    c = F.dropout(x, 0.5, training=True)
    return a, b, c


def main():
    torch.manual_seed(0)
    x = torch.randn(4, 3)
    for i, t in enumerate(reductions(x)):
        show(f"reduction{i}", t)
    for i, t in enumerate(shapes(x)):
        show(f"shape{i}", t)
    for i, t in enumerate(dtypes(x)):
        show(f"dtype{i}", t)
    show("in_place", in_place(x))
    for i, t in enumerate(functional(x, torch.randn(5, 3))):
        show(f"functional{i}", t)
    for i, t in enumerate(randomness(x)):
        show(f"random{i}", t)


main()
