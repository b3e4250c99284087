# PyTorch's seq2seq translation tutorial style: EncoderRNN (Embedding + GRU), AttnDecoderRNN
# (attention over encoder outputs with bmm), teacher forcing drawn with random.random(),
# greedy decoding with topk and an EOS test on .item(), loss.item() / target_length returned
import random
import torch, torch.nn as nn, torch.nn.functional as F
from torch import optim
from harness import run, run_loop

SOS_token, EOS_token, MAX_LENGTH = 0, 1, 6
teacher_forcing_ratio = 0.5
V, H = 12, 16

class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size):
        super(EncoderRNN, self).__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size)
    def forward(self, input, hidden):
        embedded = self.embedding(input).view(1, 1, -1)
        output = embedded
        output, hidden = self.gru(output, hidden)
        return output, hidden
    def initHidden(self):
        return torch.zeros(1, 1, self.hidden_size)

class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.1, max_length=MAX_LENGTH):
        super(AttnDecoderRNN, self).__init__()
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.dropout_p = dropout_p
        self.max_length = max_length
        self.embedding = nn.Embedding(self.output_size, self.hidden_size)
        self.attn = nn.Linear(self.hidden_size * 2, self.max_length)
        self.attn_combine = nn.Linear(self.hidden_size * 2, self.hidden_size)
        self.dropout = nn.Dropout(self.dropout_p)
        self.gru = nn.GRU(self.hidden_size, self.hidden_size)
        self.out = nn.Linear(self.hidden_size, self.output_size)
    def forward(self, input, hidden, encoder_outputs):
        embedded = self.embedding(input).view(1, 1, -1)
        embedded = self.dropout(embedded)
        attn_weights = F.softmax(self.attn(torch.cat((embedded[0], hidden[0]), 1)), dim=1)
        attn_applied = torch.bmm(attn_weights.unsqueeze(0), encoder_outputs.unsqueeze(0))
        output = torch.cat((embedded[0], attn_applied[0]), 1)
        output = self.attn_combine(output).unsqueeze(0)
        output = F.relu(output)
        output, hidden = self.gru(output, hidden)
        output = F.log_softmax(self.out(output[0]), dim=1)
        return output, hidden, attn_weights

class Seq2Seq(nn.Module):  # teacher-forced decoding of a whole target: the inference row
    def __init__(self):
        super().__init__()
        self.encoder = EncoderRNN(V, H)
        self.decoder = AttnDecoderRNN(H, V, dropout_p=0.1)
    def forward(self, input_tensor, target_tensor):
        encoder_hidden = self.encoder.initHidden()
        encoder_outputs = torch.zeros(MAX_LENGTH, self.encoder.hidden_size)
        for ei in range(input_tensor.size(0)):
            encoder_output, encoder_hidden = self.encoder(input_tensor[ei], encoder_hidden)
            encoder_outputs[ei] = encoder_output[0, 0]
        decoder_input = torch.tensor([[SOS_token]])
        decoder_hidden = encoder_hidden
        outs = []
        for di in range(target_tensor.size(0)):
            decoder_output, decoder_hidden, _ = self.decoder(decoder_input, decoder_hidden, encoder_outputs)
            outs.append(decoder_output)
            decoder_input = target_tensor[di]
        return torch.cat(outs)

criterion = nn.NLLLoss()

def train(state, batch):
    input_tensor, target_tensor = batch
    encoder, decoder, encoder_optimizer, decoder_optimizer = state
    encoder_hidden = encoder.initHidden()
    encoder_optimizer.zero_grad()
    decoder_optimizer.zero_grad()
    input_length = input_tensor.size(0)
    target_length = target_tensor.size(0)
    encoder_outputs = torch.zeros(MAX_LENGTH, encoder.hidden_size)
    loss = 0
    for ei in range(input_length):
        encoder_output, encoder_hidden = encoder(input_tensor[ei], encoder_hidden)
        encoder_outputs[ei] = encoder_output[0, 0]
    decoder_input = torch.tensor([[SOS_token]])
    decoder_hidden = encoder_hidden
    use_teacher_forcing = True if random.random() < teacher_forcing_ratio else False
    if use_teacher_forcing:
        for di in range(target_length):
            decoder_output, decoder_hidden, decoder_attention = decoder(decoder_input, decoder_hidden, encoder_outputs)
            loss += criterion(decoder_output, target_tensor[di])
            decoder_input = target_tensor[di]
    else:
        for di in range(target_length):
            decoder_output, decoder_hidden, decoder_attention = decoder(decoder_input, decoder_hidden, encoder_outputs)
            topv, topi = decoder_output.topk(1)
            decoder_input = topi.squeeze().detach()
            loss += criterion(decoder_output, target_tensor[di])
            if decoder_input.item() == EOS_token:
                break
    loss.backward()
    encoder_optimizer.step()
    decoder_optimizer.step()
    return loss.item() / target_length

torch.manual_seed(0)
model = Seq2Seq()
src = torch.tensor([[3], [4], [5], [1]]); tgt = torch.tensor([[6], [7], [8], [1]])
run("seq2seq_attn", model, (src, tgt), lambda m, s, t: F.nll_loss(m(s, t), t.view(-1)),
    lambda p: optim.SGD(p, lr=0.01))

import copy
def make_state():
    torch.manual_seed(0)
    m = Seq2Seq()
    return (m.encoder, m.decoder, optim.SGD(m.encoder.parameters(), lr=0.01), optim.SGD(m.decoder.parameters(), lr=0.01))
g = torch.Generator().manual_seed(1)
pairs = [(torch.randint(2, V, (4, 1), generator=g), torch.cat([torch.randint(2, V, (3, 1), generator=g), torch.tensor([[1]])])) for _ in range(6)]
run_loop("seq2seq_tf_loop", make_state, train, pairs)
