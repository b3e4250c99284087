# YOLOv5-style Detect head with grid/anchor decoding, + SSD-ish loss
import torch, torch.nn as nn, torch.nn.functional as F
from harness import run

class Detect(nn.Module):
    stride = None
    def __init__(self, nc=4, anchors=((10, 13, 16, 30, 33, 23), (30, 61, 62, 45, 59, 119)), ch=(16, 32)):
        super().__init__()
        self.nc = nc; self.no = nc + 5; self.nl = len(anchors); self.na = len(anchors[0]) // 2
        self.grid = [torch.empty(0) for _ in range(self.nl)]
        self.anchor_grid = [torch.empty(0) for _ in range(self.nl)]
        self.register_buffer("anchors", torch.tensor(anchors).float().view(self.nl, -1, 2))
        self.m = nn.ModuleList(nn.Conv2d(x, self.no * self.na, 1) for x in ch)
        self.stride = torch.tensor([8.0, 16.0])
    def forward(self, x):
        z = []
        for i in range(self.nl):
            x[i] = self.m[i](x[i])
            bs, _, ny, nx = x[i].shape
            x[i] = x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            if not self.training:
                if self.grid[i].shape[2:4] != x[i].shape[2:4]:
                    self.grid[i], self.anchor_grid[i] = self._make_grid(nx, ny, i)
                xy, wh, conf = x[i].sigmoid().split((2, 2, self.nc + 1), 4)
                xy = (xy * 2 + self.grid[i]) * self.stride[i]
                wh = (wh * 2) ** 2 * self.anchor_grid[i]
                y = torch.cat((xy, wh, conf), 4)
                z.append(y.view(bs, self.na * nx * ny, self.no))
        return x if self.training else (torch.cat(z, 1), x)
    def _make_grid(self, nx=20, ny=20, i=0):
        d = self.anchors[i].device; t = self.anchors[i].dtype
        shape = 1, self.na, ny, nx, 2
        y, x = torch.arange(ny, device=d, dtype=t), torch.arange(nx, device=d, dtype=t)
        yv, xv = torch.meshgrid(y, x, indexing="ij")
        grid = torch.stack((xv, yv), 2).expand(shape) - 0.5
        anchor_grid = (self.anchors[i] * self.stride[i]).view((1, self.na, 1, 1, 2)).expand(shape)
        return grid, anchor_grid

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.b1 = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.SiLU(), nn.Conv2d(16, 16, 3, 2, 1), nn.SiLU(), nn.Conv2d(16, 16, 3, 2, 1), nn.SiLU())
        self.b2 = nn.Sequential(nn.Conv2d(16, 32, 3, 2, 1), nn.SiLU())
        self.detect = Detect()
    def forward(self, x):
        p3 = self.b1(x); p4 = self.b2(p3)
        return self.detect([p3, p4])

def xywh2xyxy(x):
    y = x.clone()
    y[..., 0] = x[..., 0] - x[..., 2] / 2; y[..., 1] = x[..., 1] - x[..., 3] / 2
    y[..., 2] = x[..., 0] + x[..., 2] / 2; y[..., 3] = x[..., 1] + x[..., 3] / 2
    return y

class Post(nn.Module):
    def __init__(self):
        super().__init__(); self.net = Net()
    def forward(self, x):
        pred, _ = self.net(x)
        boxes = xywh2xyxy(pred[..., :4])
        scores = pred[..., 4:5] * pred[..., 5:]
        conf, j = scores.max(2, keepdim=True)
        return torch.cat((boxes, conf, j.float()), 2)

torch.manual_seed(0)
m = Post(); img = torch.randn(2, 3, 64, 64)
tobj = torch.rand(2, 3, 8, 8); tobj2 = torch.rand(2, 3, 4, 4)
def loss_fn(model, img):
    p = model.net(img)
    bce = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.0]))
    lobj = bce(p[0][..., 4], tobj) + bce(p[1][..., 4], tobj2)
    lbox = (p[0][..., :4].sigmoid() - 0.5).pow(2).mean() * 0.05
    return (lobj + lbox) * img.shape[0]
run("yolo_head", m, (img,), loss_fn, lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.937, nesterov=True))
