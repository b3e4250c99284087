"""Issue 11: attention layers whole. nn.TransformerEncoderLayer in eval
mode under no_grad takes its fast path (the checks use all()/any() over
generators) and `_transformer_encoder_layer_fwd` is one graph op; the
fast path of nn.MultiheadAttention returns None for the weights it was
not asked for (an undefined tensor in the op's tuple result). Training
mode and grad-enabled calls take the slow path, also in one graph."""
import torch
import torch.nn as nn

import tracejit
from capture_util import expect, same
from e2e_util import BACKEND, check, finish

torch.manual_seed(0)
x = torch.randn(2, 5, 16)
layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, batch_first=True).eval()
encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, batch_first=True), 2).eval()
mha = nn.MultiheadAttention(16, 4, batch_first=True).eval()


def run_layer(t):
    with torch.no_grad():
        return layer(t)


def run_encoder(t):
    with torch.no_grad():
        return encoder(t)


def attention_without_weights(t):
    with torch.no_grad():
        out, weights = mha(t, t, t, need_weights=False)
    return out, weights is None


def attention_with_weights(t):
    with torch.no_grad():
        return mha(t, t, t)


expect("TransformerEncoderLayer eval + no_grad (fast path)", run_layer, (x,))
ex = expect("TransformerEncoder of 2 layers eval + no_grad", run_encoder, (x,))
check(any("_transformer_encoder_layer_fwd" in g.code for g in ex.graphs), "the fast path's op is in the graph")
expect("MultiheadAttention fast path: None weights", attention_without_weights, (x,))
expect("MultiheadAttention fast path with weights", attention_with_weights, (x,))
expect("TransformerEncoderLayer with grad (slow path)", lambda t: layer(t), (x,))

# Called directly as modules under no_grad, as a user would.
with torch.no_grad():
    want = layer(x)
    got = tracejit.compile(layer, backend=BACKEND)(x)
    check(same(got, want), "compiled TransformerEncoderLayer module under no_grad matches eager")
    ex = tracejit.explain(layer)(x)
    check((ex.graph_count, ex.graph_break_count) == (1, 0), f"module: 1 graph, 0 breaks ({ex.graph_count}, {ex.graph_break_count})")
finish()
