# A text classifier as tutorials write it: padded batches with lengths, nn.utils.rnn.pack_padded_sequence
# through a bidirectional LSTM, pad_packed_sequence, max-pooling over time; a second model with
# EmbeddingBag and offsets (torchtext's text classification tutorial); accuracy as
# (pred.argmax(1) == label).sum().item() and total_loss += loss.item() in the loop
import torch, torch.nn as nn, torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from harness import run, run_loop

class LSTMClassifier(nn.Module):
    def __init__(self, vocab=30, emb=16, hidden=16, classes=3, pad_idx=0):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb, padding_idx=pad_idx)
        self.lstm = nn.LSTM(emb, hidden, num_layers=1, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(hidden * 2, classes)
        self.dropout = nn.Dropout(0.2)
    def forward(self, text, text_lengths):
        embedded = self.dropout(self.embedding(text))
        packed = pack_padded_sequence(embedded, text_lengths.cpu(), batch_first=True, enforce_sorted=False)
        packed_output, (hidden, cell) = self.lstm(packed)
        output, output_lengths = pad_packed_sequence(packed_output, batch_first=True)
        hidden = self.dropout(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1))
        return self.fc(hidden) + 0 * output.max(dim=1)[0].sum()

class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size=30, embed_dim=16, num_class=3):
        super(TextClassificationModel, self).__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()
    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()
    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)

torch.manual_seed(0)
text = torch.randint(1, 30, (4, 7)); lengths = torch.tensor([7, 5, 3, 6])
for i, n in enumerate(lengths.tolist()): text[i, n:] = 0
label = torch.tensor([0, 2, 1, 1])
run("text_lstm_packed", LSTMClassifier(), (text, lengths), lambda m, t, l: F.cross_entropy(m(t, l), label))

flat = torch.randint(0, 30, (20,)); offsets = torch.tensor([0, 4, 9, 15])
run("text_embeddingbag", TextClassificationModel(), (flat, offsets), lambda m, t, o: F.cross_entropy(m(t, o), label),
    lambda p: torch.optim.SGD(p, lr=5.0))

criterion = nn.CrossEntropyLoss()
def train_batch(state, batch):
    model, optimizer, log = state
    label, text, offsets = batch
    optimizer.zero_grad()
    predicted_label = model(text, offsets)
    loss = criterion(predicted_label, label)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
    optimizer.step()
    log["acc"] += (predicted_label.argmax(1) == label).sum().item()
    log["count"] += label.size(0)
    log["losses"].append(loss.item())
    return log["acc"] / log["count"]

def make_state():
    torch.manual_seed(0)
    m = TextClassificationModel()
    return (m, torch.optim.SGD(m.parameters(), lr=5.0), {"acc": 0, "count": 0, "losses": []})
g = torch.Generator().manual_seed(2)
batches = [(torch.randint(0, 3, (4,), generator=g), torch.randint(0, 30, (20,), generator=g), offsets) for _ in range(6)]
run_loop("text_cls_loop", make_state, train_batch, batches)
