# pytorch/examples vae style: reparameterize with randn_like, BCE(reduction='sum') + KLD
import torch, torch.nn as nn, torch.nn.functional as F
from harness import run

class VAE(nn.Module):
    def __init__(self):
        super(VAE, self).__init__()
        self.fc1 = nn.Linear(784, 64)
        self.fc21 = nn.Linear(64, 8)
        self.fc22 = nn.Linear(64, 8)
        self.fc3 = nn.Linear(8, 64)
        self.fc4 = nn.Linear(64, 784)
    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)
    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5*logvar)
        eps = torch.randn_like(std)
        return mu + eps*std
    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))
    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar

def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction='sum')
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD

torch.manual_seed(0)
data = torch.rand(8, 1, 28, 28)
def vae_loss(model, data):
    recon_batch, mu, logvar = model(data)
    loss = loss_function(recon_batch, data, mu, logvar)
    return loss / len(data)
class VAEInfer(nn.Module):   # eval: reparameterize samples, so compare the decoded mean
    def __init__(self, v): super().__init__(); self.v = v
    def forward(self, x):
        mu, logvar = self.v.encode(x.view(-1, 784))
        sample = torch.randn(x.size(0), 8)
        return self.v.decode(mu), self.v.decode(sample).shape[0]
v = VAE()
run("vae", VAEInfer(v), (data,), lambda m, d: vae_loss(m.v, d), lambda p: torch.optim.Adam(p, lr=1e-3))
