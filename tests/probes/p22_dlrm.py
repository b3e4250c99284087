# facebookresearch dlrm style: create_mlp from numpy layer sizes with np.random.normal init copied via
# torch.tensor(W, requires_grad=True), EmbeddingBag(mode="sum") list with offsets, interact_features with bmm
# and index lists li/lj built from Python comprehensions, sigmoid with a clamp threshold, BCE/MSE loss
import numpy as np, torch, torch.nn as nn
from harness import run

class DLRM_Net(nn.Module):
    def create_mlp(self, ln, sigmoid_layer):
        layers = nn.ModuleList()
        for i in range(0, ln.size - 1):
            n = ln[i]
            m = ln[i + 1]
            LL = nn.Linear(int(n), int(m), bias=True)
            mean = 0.0
            std_dev = np.sqrt(2 / (m + n))
            W = np.random.normal(mean, std_dev, size=(m, n)).astype(np.float32)
            std_dev = np.sqrt(1 / m)
            bt = np.random.normal(mean, std_dev, size=m).astype(np.float32)
            LL.weight.data = torch.tensor(W, requires_grad=True)
            LL.bias.data = torch.tensor(bt, requires_grad=True)
            layers.append(LL)
            if i == sigmoid_layer:
                layers.append(nn.Sigmoid())
            else:
                layers.append(nn.ReLU())
        return torch.nn.Sequential(*layers)
    def create_emb(self, m, ln):
        emb_l = nn.ModuleList()
        for i in range(0, ln.size):
            n = ln[i]
            EE = nn.EmbeddingBag(n, m, mode="sum", sparse=False)
            W = np.random.uniform(low=-np.sqrt(1 / n), high=np.sqrt(1 / n), size=(n, m)).astype(np.float32)
            EE.weight.data = torch.tensor(W, requires_grad=True)
            emb_l.append(EE)
        return emb_l
    def __init__(self, m_spa, ln_emb, ln_bot, ln_top, arch_interaction_op="dot", arch_interaction_itself=False, sigmoid_bot=-1, sigmoid_top=-1, loss_threshold=0.0):
        super(DLRM_Net, self).__init__()
        self.arch_interaction_op = arch_interaction_op
        self.arch_interaction_itself = arch_interaction_itself
        self.loss_threshold = loss_threshold
        self.emb_l = self.create_emb(m_spa, ln_emb)
        self.bot_l = self.create_mlp(ln_bot, sigmoid_bot)
        self.top_l = self.create_mlp(ln_top, sigmoid_top)
    def apply_mlp(self, x, layers):
        return layers(x)
    def apply_emb(self, lS_o, lS_i, emb_l):
        ly = []
        for k, sparse_index_group_batch in enumerate(lS_i):
            sparse_offset_group_batch = lS_o[k]
            E = emb_l[k]
            V = E(sparse_index_group_batch, sparse_offset_group_batch, per_sample_weights=None)
            ly.append(V)
        return ly
    def interact_features(self, x, ly):
        if self.arch_interaction_op == "dot":
            (batch_size, d) = x.shape
            T = torch.cat([x] + ly, dim=1).view((batch_size, -1, d))
            Z = torch.bmm(T, torch.transpose(T, 1, 2))
            _, ni, nj = Z.shape
            offset = 1 if self.arch_interaction_itself else 0
            li = torch.tensor([i for i in range(ni) for j in range(i + offset)])
            lj = torch.tensor([j for i in range(nj) for j in range(i + offset)])
            Zflat = Z[:, li, lj]
            R = torch.cat([x] + [Zflat], dim=1)
        elif self.arch_interaction_op == "cat":
            R = torch.cat([x] + ly, dim=1)
        else:
            raise ValueError("unsupported interaction op " + self.arch_interaction_op)
        return R
    def forward(self, dense_x, lS_o, lS_i):
        x = self.apply_mlp(dense_x, self.bot_l)
        ly = self.apply_emb(lS_o, lS_i, self.emb_l)
        z = self.interact_features(x, ly)
        p = self.apply_mlp(z, self.top_l)
        if 0.0 < self.loss_threshold and self.loss_threshold < 1.0:
            z = torch.clamp(p, min=self.loss_threshold, max=(1.0 - self.loss_threshold))
        else:
            z = p
        return z

np.random.seed(0); torch.manual_seed(0)
m_spa = 4
ln_emb = np.array([10, 20, 30])
ln_bot = np.array([8, 16, m_spa])
num_int = (ln_emb.size + 1) * ln_emb.size // 2 + m_spa
ln_top = np.array([num_int, 16, 1])
model = DLRM_Net(m_spa, ln_emb, ln_bot, ln_top, sigmoid_top=ln_top.size - 2, loss_threshold=1e-9)
B = 6
dense = torch.randn(B, 8)
lS_o = [torch.arange(0, 2 * B, 2) for _ in range(3)]
lS_i = [torch.randint(0, int(n), (2 * B,)) for n in ln_emb]
T = torch.rand(B, 1).round()
loss_fn = torch.nn.BCELoss(reduction="mean")
run("dlrm", model, (dense, lS_o, lS_i), lambda m, d, o, i: loss_fn(m(d, o, i), T), lambda p: torch.optim.SGD(p, lr=0.1))
