# pytorch/examples super_resolution style: PixelShuffle, init.orthogonal_ with calculate_gain, MSELoss, PSNR with log10
import math, torch, torch.nn as nn, torch.nn.init as init
from harness import run

class Net(nn.Module):
    def __init__(self, upscale_factor):
        super(Net, self).__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 16, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(16, 16, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(16, 8, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(8, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
        self._initialize_weights()
    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x
    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv4.weight)

torch.manual_seed(0)
m = Net(3)
x = torch.rand(2, 1, 12, 12); target = torch.rand(2, 1, 36, 36)
criterion = nn.MSELoss()
run("super_res", m, (x,), lambda m, x: criterion(m(x), target), lambda p: torch.optim.Adam(p, lr=1e-3))

class Eval(nn.Module):   # test(): psnr = 10 * log10(1 / mse.item())
    def __init__(self, m): super().__init__(); self.m = m
    def forward(self, x):
        prediction = self.m(x)
        mse = criterion(prediction, target)
        psnr = 10 * math.log10(1 / mse.item())
        return prediction, torch.tensor(psnr)
run("super_res_psnr", Eval(m), (x,), lambda m, x: criterion(m.m(x), target))
