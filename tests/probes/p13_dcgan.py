# pytorch/examples dcgan style: weights_init by classname, Generator/Discriminator with ngpu, BCELoss, two optimizers
import torch, torch.nn as nn, torch.optim as optim
import tracejit
from harness import run, summarize

nz, ngf, ndf, nc = 8, 8, 8, 3
def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)

class Generator(nn.Module):
    def __init__(self, ngpu):
        super(Generator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False), nn.Tanh())
    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output

class Discriminator(nn.Module):
    def __init__(self, ngpu):
        super(Discriminator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False), nn.Sigmoid())
    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output.view(-1, 1).squeeze(1)

torch.manual_seed(0)
netG = Generator(1); netG.apply(weights_init)
netD = Discriminator(1); netD.apply(weights_init)
criterion = nn.BCELoss()
real = torch.randn(4, nc, 16, 16)
noise = torch.randn(4, nz, 1, 1)
run("dcgan_G", netG, (noise,), lambda g, z: criterion(netD(g(z)), torch.full((z.size(0),), 1.0)),
    lambda p: optim.Adam(p, lr=2e-4, betas=(0.5, 0.999)))
run("dcgan_D", netD, (real,), lambda d, x: criterion(d(x), torch.full((x.size(0),), 1.0)),
    lambda p: optim.Adam(p, lr=2e-4, betas=(0.5, 0.999)))

# the full GAN iteration: two optimizers, fake.detach(), label.fill_, .item() for logging
real_label, fake_label = 1, 0
def gan_step(netD, netG, optD, optG, real_cpu):
    netD.zero_grad()
    batch_size = real_cpu.size(0)
    label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=real_cpu.device)
    output = netD(real_cpu)
    errD_real = criterion(output, label)
    errD_real.backward()
    D_x = output.mean().item()
    noise = torch.randn(batch_size, nz, 1, 1, device=real_cpu.device)
    fake = netG(noise)
    label.fill_(fake_label)
    output = netD(fake.detach())
    errD_fake = criterion(output, label)
    errD_fake.backward()
    D_G_z1 = output.mean().item()
    errD = errD_real + errD_fake
    optD.step()
    netG.zero_grad()
    label.fill_(real_label)
    output = netD(fake)
    errG = criterion(output, label)
    errG.backward()
    D_G_z2 = output.mean().item()
    optG.step()
    return errD.detach(), errG.detach()

import copy
for compiled in (False, True):
    torch.manual_seed(0)
    G = copy.deepcopy(netG); D = copy.deepcopy(netD)
    oD = optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999)); oG = optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
    if compiled:
        tracejit.reset()
        ex = tracejit.explain(gan_step)(copy.deepcopy(D), copy.deepcopy(G), optim.Adam(D.parameters()), optim.Adam(G.parameters()), real)
        f = tracejit.compile(gan_step)
    else:
        f = gan_step
    torch.manual_seed(3)
    out = [f(D, G, oD, oG, real) for _ in range(2)]
    if not compiled: want = out
ok = all(torch.allclose(a, b, atol=1e-4) for x, y in zip(want, out) for a, b in zip(x, y))
g, b, rs = summarize(ex)
print(f"RESULT dcgan_loop train graphs={g} breaks={b} match={ok}")
for r in rs: print(f"  REASON dcgan_loop train: {r}")
