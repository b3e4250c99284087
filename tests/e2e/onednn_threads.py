"""Two threads through the oneDNN steps and the llvm kernels (issue 41 item
5): a small residual conv net (3x3 stride-1 blocks that run as oneDNN's
Winograd once it pays, their results kept in its blocked layout between
steps; a stride-2 stage; max pooling; batch norms folded; an MLP head)
compiled at torch.set_num_threads(1) and (2), called enough times that its
convolutions go from direct to Winograd (onednn_winograd.h): every call's
values are eager's at the same thread count, and the two thread counts'
compiled values agree (oneDNN and ATen split the work across threads
without changing what each output sums, up to rounding). And the launcher
makes libgomp (ATen's and oneDNN's OpenMP runtime) wait passively: where
the environment sets no OMP_WAIT_POLICY, it starts itself again with
`passive` before any library's constructor runs (libgomp reads it only
then); a policy the environment chose, or OMP_NUM_THREADS=1, is kept as is."""
import os
import re
import subprocess

import torch
import torch.nn as nn
import torch.nn.functional as F

import tracejit
from e2e_util import check, finish

torch.manual_seed(0)
LAUNCHER = os.path.join(os.environ.get("TRACEJIT_BUILD_ROOT", os.path.join(os.path.dirname(__file__), "..", "..", "build")),
                        "tracejit")


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(c)
        self.c2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        return F.relu(self.b2(self.c2(y)) + x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 3, padding=1)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.a = Block(32)
        self.b = Block(32)
        self.down = nn.Conv2d(32, 64, 3, stride=2, padding=1)
        self.c = Block(64)
        self.head = nn.Sequential(nn.Linear(64, 48), nn.GELU(), nn.Linear(48, 10))

    def forward(self, x):
        x = self.pool(F.relu(self.stem(x)))
        x = self.b(self.a(x))
        x = self.c(F.relu(self.down(x)))
        return self.head(x.mean((2, 3)))


net = Net().eval()
for m in net.modules():  # batch norms that do something
    if isinstance(m, nn.BatchNorm2d):
        m.running_mean.uniform_(-0.2, 0.2)
        m.running_var.uniform_(0.5, 1.5)
        m.weight.data.uniform_(0.5, 1.5)
x = torch.randn(4, 3, 32, 32)

results = {}
for threads in (1, 2):
    torch.set_num_threads(threads)
    check(torch.get_num_threads() == threads, f"torch.set_num_threads({threads}) took")
    fn = tracejit.compile(lambda m, v: m(v))
    with torch.no_grad():
        want = net(x)
        for call in range(6):  # 4x16x16 outputs: direct for the first call, Winograd from the second
            got = fn(net, x)
            check(torch.allclose(got, want, rtol=1e-4, atol=1e-4),
                  f"{threads} thread(s), call {call + 1}: eager's values "
                  f"(max diff {(got - want).abs().max().item():.3g})")
    results[threads] = got
torch.set_num_threads(1)
check(torch.allclose(results[1], results[2], rtol=1e-4, atol=1e-4),
      f"1 and 2 threads agree (max diff {(results[1] - results[2]).abs().max().item():.3g})")


def launched(**env_set):
    """(OMP_WAIT_POLICY as the program sees it, libgomp's GOMP_SPINCOUNT) in a launcher started with the
    environment less the OpenMP variables, plus `env_set`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
    env.update(env_set, OMP_DISPLAY_ENV="verbose")  # libgomp prints its settings when it loads
    proc = subprocess.run([LAUNCHER, "-c", "import os; print('policy', os.environ.get('OMP_WAIT_POLICY'))"],
                          env=env, capture_output=True, text=True)
    check(proc.returncode == 0, f"the launcher ran ({proc.stderr[-300:]})")
    policy = re.search(r"^policy (\S+)$", proc.stdout, re.M)
    spin = re.findall(r"GOMP_SPINCOUNT = '(\d+)'", proc.stderr)
    return (policy.group(1) if policy else None), (spin[-1] if spin else None)


check(launched() == ("passive", "0"), f"no policy set: the launcher's libgomp waits passively ({launched()})")
check(launched(OMP_WAIT_POLICY="active")[1] == "30000000000", "OMP_WAIT_POLICY=active is kept")
check(launched(OMP_NUM_THREADS="1") == ("None", "300000"), "OMP_NUM_THREADS=1: started once, libgomp's default")
finish()
