"""Transposed convolutions in training graphs (issue 41 item 3,
jit/transposed_conv.h): the llvm backend runs `aten::convolution` and
`aten::convolution_backward` with transposed=True through ATen's
plain-convolution (mkldnn) path instead of ATen's generic
slow_conv_transpose2d. Compiled against eager: a generator's training step
as one graph (the backward inside it), a forward whose backward runs
outside the compiled function (AOT's forward and backward graphs), with
bias, stride, padding, output_padding, dilation, few and many output
channels, an input that needs no gradient, and a channels-last input (not
taken: ATen's op). Values bit for bit on eager/aot_eager, within float
tolerance on llvm, where torch.profiler must also show the rewritten calls
(else this test would pass without the rewrite)."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, check, finish, tensors_same

torch.manual_seed(0)
torch.set_num_threads(1)


class Gen(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.ConvTranspose2d(8, 32, 4, 1, 0, bias=False)
        self.b1 = nn.BatchNorm2d(32)
        self.c2 = nn.ConvTranspose2d(32, 16, 4, 2, 1)                       # bias
        self.c3 = nn.ConvTranspose2d(16, 16, 3, 2, 1, output_padding=1)    # output_padding
        self.c4 = nn.ConvTranspose2d(16, 16, 3, 1, 2, dilation=2)          # dilation
        self.c5 = nn.ConvTranspose2d(16, 3, 4, 2, 1, bias=False)           # 3 channels: the forward stays ATen's

    def forward(self, z):
        x = F.relu(self.b1(self.c1(z)))
        x = F.relu(self.c2(x))
        x = F.relu(self.c3(x))
        x = F.relu(self.c4(x))
        return torch.tanh(self.c5(x))


def step(state, z, target):
    model, opt = state
    opt.zero_grad()
    loss = F.mse_loss(model(z), target)
    loss.backward()
    opt.step()
    return loss


def params_and_grads(model):
    return [p.detach() for p in model.parameters()] + [p.grad for p in model.parameters()]


model = Gen()
eager_state = (model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9))
model_c = copy.deepcopy(model)
compiled_state = (model_c, torch.optim.SGD(model_c.parameters(), lr=0.05, momentum=0.9))
cstep = tracejit.compile(step, backend=BACKEND)
batches = [(torch.randn(4, 8, 1, 1), torch.rand(4, 3, 32, 32) * 2 - 1) for _ in range(3)]
with torch.profiler.profile() as prof:
    for i, (z, t) in enumerate(batches):
        want = step(eager_state, z, t)
        got = cstep(compiled_state, z, t)
        check(tensors_same(got.detach(), want.detach(), rtol=1e-4, atol=1e-6), f"training step {i}: the loss")
        check(tensors_same(params_and_grads(model_c), params_and_grads(model), rtol=1e-4, atol=1e-5),
              f"training step {i}: parameters and gradients")
names = {e.name for e in prof.events()}
if BACKEND == "llvm":
    check("tj::transposed conv forward" in names, "the step's deconvolutions ran through the plain-convolution path")
    check("tj::transposed conv backward" in names, "and their backward too")

# A forward compiled alone: its backward runs outside (AOT's backward graph).
# The input requires grad (the data gradient) and does not (the first layer).
deconv = nn.ConvTranspose2d(24, 16, 3, 2, 1, output_padding=1)
deconv_c = copy.deepcopy(deconv)


def fwd(m, x):
    return torch.sigmoid(m(x)) * 2


cfwd = tracejit.compile(fwd, backend=BACKEND)
for needs_grad in (True, False):
    x = torch.randn(2, 24, 7, 5)
    xe, xc = x.clone().requires_grad_(needs_grad), x.clone().requires_grad_(needs_grad)
    with torch.profiler.profile() as prof:
        ye, yc = fwd(deconv, xe), cfwd(deconv_c, xc)
        g = torch.randn_like(ye)
        ye.backward(g)
        yc.backward(g)
    check(tensors_same(yc.detach(), ye.detach(), rtol=1e-4, atol=1e-6), f"forward alone (x needs grad: {needs_grad})")
    check(tensors_same([deconv_c.weight.grad, deconv_c.bias.grad], [deconv.weight.grad, deconv.bias.grad],
                       rtol=1e-4, atol=1e-5), f"its weight and bias gradients (x needs grad: {needs_grad})")
    if needs_grad:
        check(tensors_same(xc.grad, xe.grad, rtol=1e-4, atol=1e-5), "its input gradient")
    else:
        check(xc.grad is None, "no input gradient where none was asked")
    if BACKEND == "llvm":
        names = {e.name for e in prof.events()}
        check("tj::transposed conv forward" in names and "tj::transposed conv backward" in names,
              f"forward alone: both ran through the plain-convolution path (x needs grad: {needs_grad})")
    deconv.zero_grad()
    deconv_c.zero_grad()

# A channels-last input: not taken (ATen's op), values still eager's.
x = torch.randn(2, 24, 7, 5).to(memory_format=torch.channels_last).requires_grad_(True)
xc = x.detach().clone(memory_format=torch.channels_last).requires_grad_(True)
ye, yc = fwd(deconv, x), cfwd(deconv_c, xc)
ye.sum().backward()
yc.sum().backward()
check(tensors_same(yc.detach(), ye.detach(), rtol=1e-4, atol=1e-6), "channels-last input: the forward")
check(tensors_same([xc.grad, deconv_c.weight.grad], [x.grad, deconv.weight.grad], rtol=1e-4, atol=1e-5),
      "channels-last input: the gradients")

finish()
