# pytorch/examples siamese_network style: forward_once, torch.cat of the two embeddings, fc head, sigmoid, BCELoss,
# init_weights via isinstance checks, and a contrastive loss with torch.clamp(margin - d, min=0.0)
import torch, torch.nn as nn, torch.nn.functional as F
from harness import run

class SiameseNetwork(nn.Module):
    def __init__(self):
        super(SiameseNetwork, self).__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
            nn.Conv2d(8, 16, kernel_size=3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((1, 1)))
        self.fc_in_features = 16
        self.fc = nn.Sequential(nn.Linear(self.fc_in_features * 2, 32), nn.ReLU(inplace=True), nn.Linear(32, 1))
        self.sigmoid = nn.Sigmoid()
        self.cnn.apply(self.init_weights)
        self.fc.apply(self.init_weights)
    def init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            m.bias.data.fill_(0.01)
    def forward_once(self, x):
        output = self.cnn(x)
        output = output.view(output.size()[0], -1)
        return output
    def forward(self, input1, input2):
        output1 = self.forward_once(input1)
        output2 = self.forward_once(input2)
        output = torch.cat((output1, output2), 1)
        output = self.fc(output)
        output = self.sigmoid(output)
        return output

class ContrastiveLoss(torch.nn.Module):
    def __init__(self, margin=2.0):
        super(ContrastiveLoss, self).__init__()
        self.margin = margin
    def forward(self, output1, output2, label):
        euclidean_distance = F.pairwise_distance(output1, output2, keepdim=True)
        loss_contrastive = torch.mean((1 - label) * torch.pow(euclidean_distance, 2) +
                                      (label) * torch.pow(torch.clamp(self.margin - euclidean_distance, min=0.0), 2))
        return loss_contrastive

torch.manual_seed(0)
a = torch.randn(4, 1, 16, 16); b = torch.randn(4, 1, 16, 16); targets = torch.randint(0, 2, (4,)).float()
criterion = nn.BCELoss()
m = SiameseNetwork()
run("siamese", m, (a, b), lambda m, x, y: criterion(m(x, y).squeeze(), targets), lambda p: torch.optim.Adadelta(p, lr=1.0))
closs = ContrastiveLoss()
run("siamese_contrastive", m, (a, b), lambda m, x, y: closs(m.forward_once(x), m.forward_once(y), targets.view(-1, 1)))
