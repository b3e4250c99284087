# CycleGAN style (junyanz/pytorch-CycleGAN-and-pix2pix idioms): ResNet-block generators with
# ReflectionPad2d and InstanceNorm2d, PatchGAN discriminators, an ImagePool that returns a past
# fake with random.uniform, optimizer over itertools.chain of two nets' parameters, set_requires_grad
# on the discriminators, LSGAN (MSELoss against torch.tensor(1.0) expanded), cycle and identity L1 losses
import itertools, random
import torch, torch.nn as nn
from harness import run, run_loop

class ResnetBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv_block = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, 3), nn.InstanceNorm2d(dim), nn.ReLU(True),
                                        nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, 3), nn.InstanceNorm2d(dim))
    def forward(self, x):
        return x + self.conv_block(x)

class ResnetGenerator(nn.Module):
    def __init__(self, nc=3, ngf=8, n_blocks=2):
        super().__init__()
        model = [nn.ReflectionPad2d(3), nn.Conv2d(nc, ngf, 7), nn.InstanceNorm2d(ngf), nn.ReLU(True),
                 nn.Conv2d(ngf, ngf * 2, 3, stride=2, padding=1), nn.InstanceNorm2d(ngf * 2), nn.ReLU(True)]
        model += [ResnetBlock(ngf * 2) for _ in range(n_blocks)]
        model += [nn.ConvTranspose2d(ngf * 2, ngf, 3, stride=2, padding=1, output_padding=1), nn.InstanceNorm2d(ngf), nn.ReLU(True),
                  nn.ReflectionPad2d(3), nn.Conv2d(ngf, nc, 7), nn.Tanh()]
        self.model = nn.Sequential(*model)
    def forward(self, input):
        return self.model(input)

class NLayerDiscriminator(nn.Module):
    def __init__(self, nc=3, ndf=8):
        super().__init__()
        self.model = nn.Sequential(nn.Conv2d(nc, ndf, 4, 2, 1), nn.LeakyReLU(0.2, True),
                                   nn.Conv2d(ndf, ndf * 2, 4, 2, 1), nn.InstanceNorm2d(ndf * 2), nn.LeakyReLU(0.2, True),
                                   nn.Conv2d(ndf * 2, 1, 4, 1, 1))
    def forward(self, input):
        return self.model(input)

class GANLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer('real_label', torch.tensor(1.0))
        self.register_buffer('fake_label', torch.tensor(0.0))
        self.loss = nn.MSELoss()
    def __call__(self, prediction, target_is_real):
        target_tensor = (self.real_label if target_is_real else self.fake_label).expand_as(prediction)
        return self.loss(prediction, target_tensor)

class ImagePool():
    def __init__(self, pool_size):
        self.pool_size = pool_size
        self.num_imgs = 0
        self.images = []
    def query(self, images):
        return_images = []
        for image in images:
            image = torch.unsqueeze(image.data, 0)
            if self.num_imgs < self.pool_size:
                self.num_imgs = self.num_imgs + 1
                self.images.append(image)
                return_images.append(image)
            else:
                p = random.uniform(0, 1)
                if p > 0.5:
                    random_id = random.randint(0, self.pool_size - 1)
                    tmp = self.images[random_id].clone()
                    self.images[random_id] = image
                    return_images.append(tmp)
                else:
                    return_images.append(image)
        return torch.cat(return_images, 0)

def set_requires_grad(nets, requires_grad=False):
    if not isinstance(nets, list):
        nets = [nets]
    for net in nets:
        if net is not None:
            for param in net.parameters():
                param.requires_grad = requires_grad

criterionGAN, criterionCycle, criterionIdt = GANLoss(), nn.L1Loss(), nn.L1Loss()
lambda_A = lambda_B = 10.0; lambda_idt = 0.5

def optimize_parameters(st, batch):
    netG_A, netG_B, netD_A, netD_B, optimizer_G, optimizer_D, fake_A_pool, fake_B_pool = st
    real_A, real_B = batch
    fake_B = netG_A(real_A); rec_A = netG_B(fake_B)
    fake_A = netG_B(real_B); rec_B = netG_A(fake_A)
    set_requires_grad([netD_A, netD_B], False)
    optimizer_G.zero_grad()
    idt_A = netG_A(real_B); loss_idt_A = criterionIdt(idt_A, real_B) * lambda_B * lambda_idt
    idt_B = netG_B(real_A); loss_idt_B = criterionIdt(idt_B, real_A) * lambda_A * lambda_idt
    loss_G_A = criterionGAN(netD_A(fake_B), True)
    loss_G_B = criterionGAN(netD_B(fake_A), True)
    loss_cycle_A = criterionCycle(rec_A, real_A) * lambda_A
    loss_cycle_B = criterionCycle(rec_B, real_B) * lambda_B
    loss_G = loss_G_A + loss_G_B + loss_cycle_A + loss_cycle_B + loss_idt_A + loss_idt_B
    loss_G.backward()
    optimizer_G.step()
    set_requires_grad([netD_A, netD_B], True)
    optimizer_D.zero_grad()
    fake_B_ = fake_B_pool.query(fake_B)
    loss_D_A = (criterionGAN(netD_A(real_B), True) + criterionGAN(netD_A(fake_B_.detach()), False)) * 0.5
    loss_D_A.backward()
    fake_A_ = fake_A_pool.query(fake_A)
    loss_D_B = (criterionGAN(netD_B(real_A), True) + criterionGAN(netD_B(fake_A_.detach()), False)) * 0.5
    loss_D_B.backward()
    optimizer_D.step()
    return {"G": loss_G.item(), "D_A": loss_D_A.item(), "D_B": loss_D_B.item()}

torch.manual_seed(0)
x = torch.randn(1, 3, 16, 16)
run("cyclegan_G", ResnetGenerator(), (x,), lambda g, a: nn.functional.l1_loss(g(a), a),
    lambda p: torch.optim.Adam(p, lr=2e-4, betas=(0.5, 0.999)))
run("cyclegan_D", NLayerDiscriminator(), (x,), lambda d, a: criterionGAN(d(a), True),
    lambda p: torch.optim.Adam(p, lr=2e-4, betas=(0.5, 0.999)))

def make_state():
    torch.manual_seed(0)
    GA, GB, DA, DB = ResnetGenerator(), ResnetGenerator(), NLayerDiscriminator(), NLayerDiscriminator()
    oG = torch.optim.Adam(itertools.chain(GA.parameters(), GB.parameters()), lr=2e-4, betas=(0.5, 0.999))
    oD = torch.optim.Adam(itertools.chain(DA.parameters(), DB.parameters()), lr=2e-4, betas=(0.5, 0.999))
    return (GA, GB, DA, DB, oG, oD, ImagePool(2), ImagePool(2))
g = torch.Generator().manual_seed(6)
pairs = [(torch.randn(1, 3, 16, 16, generator=g), torch.randn(1, 3, 16, 16, generator=g)) for _ in range(4)]
run_loop("cyclegan_step", make_state, optimize_parameters, pairs)
