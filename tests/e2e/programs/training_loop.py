"""A small training loop (model, loss, backward, SGD) whose printed losses
and final parameters must be identical under python3.11 and under
`tracejit --compile-all` (see ../compile_all_transcript.py)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc1 = nn.Linear(4 * 4 * 4, 16)
        self.fc2 = nn.Linear(16, 3)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        x = self.drop(F.gelu(self.fc1(x.flatten(1))))
        return self.fc2(x)


def train_step(model, opt, x, y):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


def evaluate(model, x, y):
    with torch.no_grad():
        logits = model(x)
        return (logits.argmax(dim=1) == y).float().mean().item(), F.mse_loss(logits.softmax(-1), F.one_hot(y, 3).float()).item()


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x = torch.randn(16, 1, 8, 8)
y = torch.randint(0, 3, (16,))
for step in range(6):
    print("step", step, "loss", round(train_step(model, opt, x, y), 5))
model.eval()
acc, mse = evaluate(model, x, y)
print("eval", round(acc, 4), round(mse, 5))
print("params", [round(p.sum().item(), 4) for p in model.parameters()])
print("running_mean", [round(v, 4) for v in model.bn.running_mean.tolist()])
