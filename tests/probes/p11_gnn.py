# GCN / GIN message passing with scatter_add / index_add_ (PyG-free), degree normalisation, global mean pool
import torch, torch.nn as nn, torch.nn.functional as F
from harness import run

def scatter_add(src, index, dim_size):
    out = torch.zeros(dim_size, src.size(-1), dtype=src.dtype, device=src.device)
    return out.scatter_add_(0, index.unsqueeze(-1).expand_as(src), src)

def add_self_loops(edge_index, num_nodes):
    loop = torch.arange(0, num_nodes, dtype=torch.long, device=edge_index.device)
    loop = loop.unsqueeze(0).repeat(2, 1)
    return torch.cat([edge_index, loop], dim=1)

def degree(index, num_nodes, dtype=None):
    out = torch.zeros((num_nodes,), dtype=dtype, device=index.device)
    one = torch.ones((index.size(0),), dtype=out.dtype, device=out.device)
    return out.scatter_add_(0, index, one)

class GCNConv(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.lin = nn.Linear(i, o, bias=False); self.bias = nn.Parameter(torch.zeros(o))
    def forward(self, x, edge_index):
        N = x.size(0)
        edge_index = add_self_loops(edge_index, N)
        row, col = edge_index[0], edge_index[1]
        deg = degree(col, N, dtype=x.dtype)
        deg_inv_sqrt = deg.pow(-0.5)
        deg_inv_sqrt[deg_inv_sqrt == float("inf")] = 0
        norm = deg_inv_sqrt[row] * deg_inv_sqrt[col]
        x = self.lin(x)
        msg = norm.view(-1, 1) * x[row]
        return scatter_add(msg, col, N) + self.bias

class GINConv(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(d, d), nn.BatchNorm1d(d), nn.ReLU(), nn.Linear(d, d))
        self.eps = nn.Parameter(torch.Tensor([0]))
    def forward(self, x, edge_index):
        agg = torch.zeros_like(x).index_add_(0, edge_index[1], x[edge_index[0]])
        return self.mlp((1 + self.eps) * x + agg)

def global_mean_pool(x, batch, size):
    s = scatter_add(x, batch, size)
    cnt = torch.bincount(batch, minlength=size).clamp(min=1).unsqueeze(-1).to(x.dtype)
    return s / cnt

class Net(nn.Module):
    def __init__(self, i=8, h=16, c=3):
        super().__init__()
        self.conv1 = GCNConv(i, h); self.conv2 = GINConv(h); self.lin = nn.Linear(h, c)
    def forward(self, x, edge_index, batch):
        x = F.relu(self.conv1(x, edge_index))
        x = F.dropout(x, p=0.5, training=self.training)
        x = self.conv2(x, edge_index)
        x = global_mean_pool(x, batch, 2)
        return F.log_softmax(self.lin(x), dim=1)

torch.manual_seed(0)
m = Net(); x = torch.randn(10, 8)
ei = torch.randint(0, 10, (2, 30)); batch = torch.tensor([0] * 5 + [1] * 5); y = torch.tensor([0, 2])
def loss_fn(model, x, ei, batch):
    return F.nll_loss(model(x, ei, batch), y)
run("gnn", m, (x, ei, batch), loss_fn, lambda p: torch.optim.Adam(p, lr=0.01, weight_decay=5e-4))
