# recommender autoencoders: a Mult-VAE (F.normalize of the click vector, dropout, encoder output split into
# mu/logvar by slicing, reparameterize only in training, multinomial log-likelihood + annealed KL) and an
# NVIDIA DeepRec-style AutoEncoder (weights as ParameterLists looped with enumerate/zip, activation chosen by
# name, decoder with transposed encoder weights, masked MSE normalized by the number of ratings)
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F
from torch.nn import init
from harness import run

class MultiVAE(nn.Module):
    def __init__(self, p_dims, q_dims=None, dropout=0.5):
        super(MultiVAE, self).__init__()
        self.p_dims = p_dims
        if q_dims:
            assert q_dims[0] == p_dims[-1], "In and Out dimensions must equal to each other"
            assert q_dims[-1] == p_dims[0], "Latent dimension for p- and q- network mismatches."
            self.q_dims = q_dims
        else:
            self.q_dims = p_dims[::-1]
        temp_q_dims = self.q_dims[:-1] + [self.q_dims[-1] * 2]
        self.q_layers = nn.ModuleList([nn.Linear(d_in, d_out) for d_in, d_out in zip(temp_q_dims[:-1], temp_q_dims[1:])])
        self.p_layers = nn.ModuleList([nn.Linear(d_in, d_out) for d_in, d_out in zip(self.p_dims[:-1], self.p_dims[1:])])
        self.drop = nn.Dropout(dropout)
        self.init_weights()
    def forward(self, input):
        mu, logvar = self.encode(input)
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar
    def encode(self, input):
        h = F.normalize(input)
        h = self.drop(h)
        for i, layer in enumerate(self.q_layers):
            h = layer(h)
            if i != len(self.q_layers) - 1:
                h = F.tanh(h)
            else:
                mu = h[:, :self.q_dims[-1]]
                logvar = h[:, self.q_dims[-1]:]
        return mu, logvar
    def reparameterize(self, mu, logvar):
        if self.training:
            std = torch.exp(0.5 * logvar)
            eps = torch.randn_like(std)
            return eps.mul(std).add_(mu)
        else:
            return mu
    def decode(self, z):
        h = z
        for i, layer in enumerate(self.p_layers):
            h = layer(h)
            if i != len(self.p_layers) - 1:
                h = F.tanh(h)
        return h
    def init_weights(self):
        for layer in self.q_layers:
            size = layer.weight.size()
            fan_out = size[0]
            fan_in = size[1]
            std = np.sqrt(2.0 / (fan_in + fan_out))
            layer.weight.data.normal_(0.0, std)
            layer.bias.data.normal_(0.0, 0.001)
        for layer in self.p_layers:
            size = layer.weight.size()
            std = np.sqrt(2.0 / (size[0] + size[1]))
            layer.weight.data.normal_(0.0, std)
            layer.bias.data.normal_(0.0, 0.001)

def loss_function(recon_x, x, mu, logvar, anneal=1.0):
    BCE = -torch.mean(torch.sum(F.log_softmax(recon_x, 1) * x, -1))
    KLD = -0.5 * torch.mean(torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1))
    return BCE + anneal * KLD

def activation(input, kind):
    if kind == 'selu':
        return F.selu(input)
    elif kind == 'relu':
        return F.relu(input)
    elif kind == 'sigmoid':
        return torch.sigmoid(input)
    elif kind == 'tanh':
        return torch.tanh(input)
    elif kind == 'elu':
        return F.elu(input)
    elif kind == 'lrelu':
        return F.leaky_relu(input)
    elif kind == 'none':
        return input
    else:
        raise ValueError('Unknown non-linearity type')

def MSEloss(inputs, targets, size_average=False):
    mask = targets != 0
    num_ratings = torch.sum(mask.float())
    criterion = nn.MSELoss(reduction='sum' if not size_average else 'mean')
    return criterion(inputs * mask.float(), targets), num_ratings

class AutoEncoder(nn.Module):
    def __init__(self, layer_sizes, nl_type='selu', is_constrained=True, dp_drop_prob=0.0, last_layer_activations=True):
        super(AutoEncoder, self).__init__()
        self._dp_drop_prob = dp_drop_prob
        self._last_layer_activations = last_layer_activations
        if dp_drop_prob > 0:
            self.drop = nn.Dropout(dp_drop_prob)
        self._last = len(layer_sizes) - 2
        self._nl_type = nl_type
        self.encode_w = nn.ParameterList([nn.Parameter(torch.rand(layer_sizes[i + 1], layer_sizes[i])) for i in range(len(layer_sizes) - 1)])
        for ind, w in enumerate(self.encode_w):
            init.xavier_uniform_(w)
        self.encode_b = nn.ParameterList([nn.Parameter(torch.zeros(layer_sizes[i + 1])) for i in range(len(layer_sizes) - 1)])
        reversed_enc_layers = list(reversed(layer_sizes))
        self.is_constrained = is_constrained
        if not is_constrained:
            self.decode_w = nn.ParameterList([nn.Parameter(torch.rand(reversed_enc_layers[i + 1], reversed_enc_layers[i])) for i in range(len(reversed_enc_layers) - 1)])
            for ind, w in enumerate(self.decode_w):
                init.xavier_uniform_(w)
        self.decode_b = nn.ParameterList([nn.Parameter(torch.zeros(reversed_enc_layers[i + 1])) for i in range(len(reversed_enc_layers) - 1)])
    def encode(self, x):
        for ind, w in enumerate(self.encode_w):
            x = activation(input=F.linear(input=x, weight=w, bias=self.encode_b[ind]), kind=self._nl_type)
        if self._dp_drop_prob > 0:
            x = self.drop(x)
        return x
    def decode(self, z):
        if self.is_constrained:
            for ind, w in enumerate(list(reversed(self.encode_w))):
                z = activation(input=F.linear(input=z, weight=w.transpose(0, 1), bias=self.decode_b[ind]),
                               kind=self._nl_type if ind != self._last or self._last_layer_activations else 'none')
        else:
            for ind, w in enumerate(self.decode_w):
                z = activation(input=F.linear(input=z, weight=w, bias=self.decode_b[ind]),
                               kind=self._nl_type if ind != self._last or self._last_layer_activations else 'none')
        return z
    def forward(self, x):
        return self.decode(self.encode(x))

torch.manual_seed(0); np.random.seed(0)
clicks = (torch.rand(8, 40) > 0.8).float()
mv = MultiVAE([8, 16, 40])
def multvae_loss(m, x):
    recon_batch, mu, logvar = m(x)
    return loss_function(recon_batch, x, mu, logvar, anneal=0.2)
run("multvae", mv, (clicks,), multvae_loss, lambda p: torch.optim.Adam(p, lr=1e-3, weight_decay=0.0))
ratings = torch.randint(0, 6, (8, 40)).float() * (torch.rand(8, 40) > 0.7).float()
ae = AutoEncoder([40, 16, 8], nl_type='selu', is_constrained=True, dp_drop_prob=0.1)
def ae_loss(m, x):
    outputs = m(x)
    loss, num_ratings = MSEloss(outputs, x)
    loss = loss / num_ratings
    return loss
run("deeprec_ae", ae, (ratings,), ae_loss, lambda p: torch.optim.SGD(p, lr=0.005, momentum=0.9, weight_decay=0.0))
ae2 = AutoEncoder([40, 16, 8], nl_type='elu', is_constrained=False)
run("deeprec_ae_free", ae2, (ratings,), ae_loss, lambda p: torch.optim.Adam(p, lr=1e-3))
