# RAFT / RIFE-style optical flow and frame interpolation: coords_grid via meshgrid, a correlation volume
# divided by torch.sqrt(torch.tensor(dim).float()), bilinear_sampler with grid_sample(align_corners=True),
# upflow8 via F.interpolate(scale_factor=...), a backwarp grid cache dict keyed on (str(device), str(size)),
# an iterative refinement loop, and a multi-scale IFBlock with F.interpolate(scale_factor=1. / scale)
import torch, torch.nn as nn, torch.nn.functional as F
from harness import run

def coords_grid(batch, ht, wd, device):
    coords = torch.meshgrid(torch.arange(ht, device=device), torch.arange(wd, device=device))
    coords = torch.stack(coords[::-1], dim=0).float()
    return coords[None].repeat(batch, 1, 1, 1)

def bilinear_sampler(img, coords, mode='bilinear', mask=False):
    H, W = img.shape[-2:]
    xgrid, ygrid = coords.split([1, 1], dim=-1)
    xgrid = 2 * xgrid / (W - 1) - 1
    ygrid = 2 * ygrid / (H - 1) - 1
    grid = torch.cat([xgrid, ygrid], dim=-1)
    img = F.grid_sample(img, grid, align_corners=True)
    if mask:
        mask = (xgrid > -1) & (ygrid > -1) & (xgrid < 1) & (ygrid < 1)
        return img, mask.float()
    return img

def upflow8(flow, mode='bilinear'):
    new_size = (8 * flow.shape[2], 8 * flow.shape[3])
    return 8 * F.interpolate(flow, size=new_size, mode=mode, align_corners=True)

class CorrBlock:
    def __init__(self, fmap1, fmap2, radius=2):
        self.radius = radius
        corr = CorrBlock.corr(fmap1, fmap2)
        batch, h1, w1, dim, h2, w2 = corr.shape
        self.corr = corr.reshape(batch * h1 * w1, dim, h2, w2)
    def __call__(self, coords):
        r = self.radius
        coords = coords.permute(0, 2, 3, 1)
        batch, h1, w1, _ = coords.shape
        dx = torch.linspace(-r, r, 2 * r + 1, device=coords.device)
        dy = torch.linspace(-r, r, 2 * r + 1, device=coords.device)
        delta = torch.stack(torch.meshgrid(dy, dx), axis=-1)
        centroid_lvl = coords.reshape(batch * h1 * w1, 1, 1, 2)
        delta_lvl = delta.view(1, 2 * r + 1, 2 * r + 1, 2)
        coords_lvl = centroid_lvl + delta_lvl
        corr = bilinear_sampler(self.corr, coords_lvl)
        corr = corr.view(batch, h1, w1, -1)
        return corr.permute(0, 3, 1, 2).contiguous().float()
    @staticmethod
    def corr(fmap1, fmap2):
        batch, dim, ht, wd = fmap1.shape
        fmap1 = fmap1.view(batch, dim, ht * wd)
        fmap2 = fmap2.view(batch, dim, ht * wd)
        corr = torch.matmul(fmap1.transpose(1, 2), fmap2)
        corr = corr.view(batch, ht, wd, 1, ht, wd)
        return corr / torch.sqrt(torch.tensor(dim).float())

class TinyRAFT(nn.Module):
    def __init__(self, iters=3):
        super().__init__()
        self.iters = iters
        self.fnet = nn.Sequential(nn.Conv2d(3, 16, 7, stride=8, padding=3), nn.ReLU(inplace=True), nn.Conv2d(16, 16, 1))
        self.update = nn.Sequential(nn.Conv2d(25 + 2, 32, 3, padding=1), nn.ReLU(inplace=True), nn.Conv2d(32, 2, 3, padding=1))
    def initialize_flow(self, img):
        N, C, H, W = img.shape
        coords0 = coords_grid(N, H // 8, W // 8, device=img.device)
        coords1 = coords_grid(N, H // 8, W // 8, device=img.device)
        return coords0, coords1
    def forward(self, image1, image2, flow_init=None):
        image1 = 2 * (image1 / 255.0) - 1.0
        image2 = 2 * (image2 / 255.0) - 1.0
        image1 = image1.contiguous(); image2 = image2.contiguous()
        fmap1, fmap2 = self.fnet(image1), self.fnet(image2)
        corr_fn = CorrBlock(fmap1, fmap2, radius=2)
        coords0, coords1 = self.initialize_flow(image1)
        if flow_init is not None:
            coords1 = coords1 + flow_init
        flow_predictions = []
        for itr in range(self.iters):
            coords1 = coords1.detach()
            corr = corr_fn(coords1)
            flow = coords1 - coords0
            delta_flow = self.update(torch.cat([corr, flow], dim=1))
            coords1 = coords1 + delta_flow
            flow_up = upflow8(coords1 - coords0)
            flow_predictions.append(flow_up)
        return flow_predictions

backwarp_tenGrid = {}
def warp(tenInput, tenFlow):
    k = (str(tenFlow.device), str(tenFlow.size()))
    if k not in backwarp_tenGrid:
        tenHorizontal = torch.linspace(-1.0, 1.0, tenFlow.shape[3], device=tenFlow.device).view(
            1, 1, 1, tenFlow.shape[3]).expand(tenFlow.shape[0], -1, tenFlow.shape[2], -1)
        tenVertical = torch.linspace(-1.0, 1.0, tenFlow.shape[2], device=tenFlow.device).view(
            1, 1, tenFlow.shape[2], 1).expand(tenFlow.shape[0], -1, -1, tenFlow.shape[3])
        backwarp_tenGrid[k] = torch.cat([tenHorizontal, tenVertical], 1).to(tenFlow.device)
    tenFlow = torch.cat([tenFlow[:, 0:1, :, :] / ((tenInput.shape[3] - 1.0) / 2.0),
                         tenFlow[:, 1:2, :, :] / ((tenInput.shape[2] - 1.0) / 2.0)], 1)
    g = (backwarp_tenGrid[k] + tenFlow).permute(0, 2, 3, 1)
    return torch.nn.functional.grid_sample(input=tenInput, grid=g, mode='bilinear', padding_mode='border', align_corners=True)

def conv(in_planes, out_planes, kernel_size=3, stride=1, padding=1, dilation=1):
    return nn.Sequential(nn.Conv2d(in_planes, out_planes, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, bias=True), nn.PReLU(out_planes))

class IFBlock(nn.Module):
    def __init__(self, in_planes, c=16):
        super(IFBlock, self).__init__()
        self.conv0 = nn.Sequential(conv(in_planes, c // 2, 3, 2, 1), conv(c // 2, c, 3, 2, 1))
        self.convblock = nn.Sequential(conv(c, c), conv(c, c))
        self.lastconv = nn.ConvTranspose2d(c, 5, 4, 2, 1)
    def forward(self, x, flow, scale):
        if scale != 1:
            x = F.interpolate(x, scale_factor=1. / scale, mode="bilinear", align_corners=False)
        if flow is not None:
            flow = F.interpolate(flow, scale_factor=1. / scale, mode="bilinear", align_corners=False) * 1. / scale
            x = torch.cat((x, flow), 1)
        x = self.conv0(x)
        x = self.convblock(x) + x
        tmp = self.lastconv(x)
        tmp = F.interpolate(tmp, scale_factor=scale * 2, mode="bilinear", align_corners=False)
        flow = tmp[:, :4] * scale * 2
        mask = tmp[:, 4:5]
        return flow, mask

class IFNet(nn.Module):
    def __init__(self):
        super(IFNet, self).__init__()
        self.block0 = IFBlock(6, c=16)
        self.block1 = IFBlock(13 + 4, c=16)
    def forward(self, x, scale=[2, 1]):
        img0 = x[:, :3]
        img1 = x[:, 3:6]
        flow_list = []
        merged = []
        warped_img0, warped_img1 = img0, img1
        flow = None
        block = [self.block0, self.block1]
        for i in range(2):
            if flow is not None:
                flow_d, mask_d = block[i](torch.cat((img0, img1, warped_img0, warped_img1, mask), 1), flow, scale=scale[i])
                flow = flow + flow_d
                mask = mask + mask_d
            else:
                flow, mask = block[i](torch.cat((img0, img1), 1), None, scale=scale[i])
            flow_list.append(flow)
            warped_img0 = warp(img0, flow[:, :2])
            warped_img1 = warp(img1, flow[:, 2:4])
            merged.append((warped_img0, warped_img1))
        mask = torch.sigmoid(mask)
        return flow_list, warped_img0 * mask + warped_img1 * (1 - mask)

torch.manual_seed(0)
i1 = torch.rand(1, 3, 32, 32) * 255; i2 = torch.rand(1, 3, 32, 32) * 255
raft = TinyRAFT()
flow_gt = torch.randn(1, 2, 32, 32)
def sequence_loss(model, a, b, gamma=0.8):
    flow_preds = model(a, b)
    n_predictions = len(flow_preds)
    flow_loss = 0.0
    for i in range(n_predictions):
        i_weight = gamma ** (n_predictions - i - 1)
        i_loss = (flow_preds[i] - flow_gt).abs()
        flow_loss += i_weight * i_loss.mean()
    return flow_loss
run("raft", raft, (i1, i2), sequence_loss, lambda p: torch.optim.AdamW(p, lr=4e-4, weight_decay=1e-5, eps=1e-8))
ifnet = IFNet()
imgs = torch.rand(2, 6, 32, 32); gt = torch.rand(2, 3, 32, 32)
run("ifnet", ifnet, (imgs,), lambda m, x: (m(x)[1] - gt).abs().mean())
