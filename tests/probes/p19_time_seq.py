# pytorch/examples time_sequence_prediction and mnist_rnn styles: LSTMCell loop over input.split(1, dim=1),
# double dtype state built with torch.zeros(..., dtype=torch.double), future steps, torch.cat(outputs, dim=1);
# an nn.LSTM classifier over rows of an image with batch_first and output[:, -1, :]
import torch, torch.nn as nn, torch.nn.functional as F
from harness import run

class Sequence(nn.Module):
    def __init__(self):
        super(Sequence, self).__init__()
        self.lstm1 = nn.LSTMCell(1, 24)
        self.lstm2 = nn.LSTMCell(24, 24)
        self.linear = nn.Linear(24, 1)
    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), 24, dtype=torch.double)
        c_t = torch.zeros(input.size(0), 24, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), 24, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), 24, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs

torch.manual_seed(0)
T = 20
x = torch.empty((3, 12), dtype=torch.long)
x[:] = torch.arange(12) + torch.randint(-8, 8, (3,)).view(3, 1)
data = torch.sin(x / 1.0 / T).double()
inp, target = data[:, :-1], data[:, 1:]
seq = Sequence().double()
criterion = nn.MSELoss()
class Pred(nn.Module):
    def __init__(self, s): super().__init__(); self.s = s
    def forward(self, x):
        future = 4
        pred = self.s(x, future=future)
        y = pred.detach().numpy()
        return pred, torch.from_numpy(y[:, -future:])
run("time_seq", Pred(seq), (inp,), lambda m, x: criterion(m.s(x), target), lambda p: torch.optim.Adam(p, lr=0.01))

class RNNNet(nn.Module):
    def __init__(self):
        super(RNNNet, self).__init__()
        self.rnn = nn.LSTM(input_size=28, hidden_size=32, batch_first=True)
        self.batchnorm = nn.BatchNorm1d(32)
        self.dropout1 = nn.Dropout2d(0.25)
        self.dropout2 = nn.Dropout2d(0.5)
        self.fc1 = nn.Linear(32, 16)
        self.fc2 = nn.Linear(16, 10)
    def forward(self, input):
        input = input.reshape(-1, 28, 28)
        output, hidden = self.rnn(input)
        output = output[:, -1, :]
        output = self.batchnorm(output)
        output = self.dropout1(output)
        output = self.fc1(output)
        output = F.relu(output)
        output = self.dropout2(output)
        output = self.fc2(output)
        output = F.log_softmax(output, dim=1)
        return output
img = torch.randn(4, 1, 28, 28); lab = torch.randint(0, 10, (4,))
run("mnist_rnn", RNNNet(), (img,), lambda m, x: F.nll_loss(m(x), lab), lambda p: torch.optim.Adadelta(p, lr=1.0))
