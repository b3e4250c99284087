# PointNet classifier with STN3d (torch.eye + Variable + numpy iden), feature transform regularizer
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F
from torch.autograd import Variable
from harness import run

class STN3d(nn.Module):
    def __init__(self, k=3):
        super().__init__()
        self.k = k
        self.conv1 = nn.Conv1d(k, 16, 1); self.conv2 = nn.Conv1d(16, 32, 1)
        self.fc1 = nn.Linear(32, 16); self.fc2 = nn.Linear(16, k * k)
        self.relu = nn.ReLU(); self.bn1 = nn.BatchNorm1d(16); self.bn2 = nn.BatchNorm1d(32)
    def forward(self, x):
        batchsize = x.size()[0]
        x = F.relu(self.bn1(self.conv1(x))); x = F.relu(self.bn2(self.conv2(x)))
        x = torch.max(x, 2, keepdim=True)[0]
        x = x.view(-1, 32)
        x = F.relu(self.fc1(x)); x = self.fc2(x)
        if self.k == 3:
            iden = Variable(torch.from_numpy(np.array([1, 0, 0, 0, 1, 0, 0, 0, 1]).astype(np.float32))).view(1, 9).repeat(batchsize, 1)
        else:
            iden = Variable(torch.eye(self.k).flatten().astype(np.float32) if False else torch.eye(self.k).flatten()).view(1, self.k * self.k).repeat(batchsize, 1)
        if x.is_cuda:
            iden = iden.cuda()
        x = x + iden
        return x.view(-1, self.k, self.k)

class PointNetCls(nn.Module):
    def __init__(self, k=5, feature_transform=True):
        super().__init__()
        self.stn = STN3d(); self.feature_transform = feature_transform
        self.conv1 = nn.Conv1d(3, 16, 1); self.conv2 = nn.Conv1d(16, 32, 1)
        self.bn1 = nn.BatchNorm1d(16); self.bn2 = nn.BatchNorm1d(32)
        if self.feature_transform:
            self.fstn = STN3d(k=16)
        self.fc = nn.Linear(32, k); self.dropout = nn.Dropout(p=0.0)
    def forward(self, x):
        n_pts = x.size()[2]
        trans = self.stn(x)
        x = x.transpose(2, 1); x = torch.bmm(x, trans); x = x.transpose(2, 1)
        x = F.relu(self.bn1(self.conv1(x)))
        if self.feature_transform:
            trans_feat = self.fstn(x)
            x = x.transpose(2, 1); x = torch.bmm(x, trans_feat); x = x.transpose(2, 1)
        else:
            trans_feat = None
        x = self.bn2(self.conv2(x))
        x = torch.max(x, 2, keepdim=True)[0].view(-1, 32)
        return F.log_softmax(self.dropout(self.fc(x)), dim=1), trans, trans_feat

def feature_transform_regularizer(trans):
    d = trans.size()[1]
    I = torch.eye(d)[None, :, :]
    if trans.is_cuda:
        I = I.cuda()
    return torch.mean(torch.norm(torch.bmm(trans, trans.transpose(2, 1)) - I, dim=(1, 2)))

torch.manual_seed(0)
m = PointNetCls(); pts = torch.randn(4, 3, 32); target = torch.randint(0, 5, (4,))
def loss_fn(model, pts):
    pred, trans, trans_feat = model(pts)
    loss = F.nll_loss(pred, target)
    if trans_feat is not None:
        loss += feature_transform_regularizer(trans_feat) * 0.001
    pred_choice = pred.data.max(1)[1]
    correct = pred_choice.eq(target.data).cpu().sum()
    return loss
run("pointnet", m, (pts,), loss_fn, lambda p: torch.optim.Adam(p, lr=0.001, betas=(0.9, 0.999)))
