"""Issue 42 (session 23): an LSTM over `pack_padded_sequence`, as text
classifiers and seq2seq encoders write it. A PackedSequence's batch sizes
are the lengths' values, so packing, the RNN over the packed batch and
unpacking run in CPython: one clean break at each of those calls, with a
reason naming the PackedSequence, and the tensor work around them compiled.
Before, the LSTM's forward was traced into six pieces (a break at each
data-dependent step inside torch's rnn.py: 3 graphs / 6 breaks for the
LSTM call alone), each a resume function recompiling for new lengths.
Values equal eager's over calls with different lengths."""
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import tracejit
from e2e_util import BACKEND, check, check_equal, finish, tensors_same

torch.manual_seed(0)
emb = nn.Embedding(20, 8)
lstm = nn.LSTM(8, 12, batch_first=True)
head = nn.Linear(12, 3)


def classify(tokens, lengths):
    x = emb(tokens)
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, (h, c) = lstm(packed)
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=tokens.shape[1])
    return head(h[-1]), out.sum(1) * 2


g = torch.Generator().manual_seed(1)
calls = [(torch.randint(0, 20, (3, 7), generator=g), torch.tensor(l)) for l in ([7, 3, 2], [5, 7, 1], [6, 6, 4], [2, 7, 7])]
tracejit.reset()
fn = tracejit.compile(classify, backend=BACKEND)
for i, (t, l) in enumerate(calls):
    check(tensors_same(fn(t, l), classify(t, l)), f"packed LSTM, lengths {l.tolist()}: values match eager")
check_equal(tracejit.counters()["recompiles"], 0, "packed LSTM: no recompile over 4 calls with new lengths")
ex = tracejit.explain(classify)(*calls[0])
reasons = [b.reason for b in ex.break_reasons]
check(all("PackedSequence" in r for r in reasons) and any("pack_padded_sequence" in r for r in reasons) and
      any("LSTM.forward" in r for r in reasons) and any("pad_packed_sequence" in r for r in reasons),
      f"packed LSTM: pack, the LSTM (and its own frame) and unpack run in CPython, each naming the PackedSequence "
      f"({reasons})")
check_equal(ex.graph_count, 2, "packed LSTM: the embedding and the head compiled around the breaks")

finish()
