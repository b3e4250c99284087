# HF BERT-style encoder: get_extended_attention_mask, token_type_ids buffer, pooler, MLM + NSP loss
import math, torch, torch.nn as nn, torch.nn.functional as F
from harness import run

class BertEmbeddings(nn.Module):
    def __init__(self, V, H, P):
        super().__init__()
        self.word_embeddings = nn.Embedding(V, H, padding_idx=0)
        self.position_embeddings = nn.Embedding(P, H)
        self.token_type_embeddings = nn.Embedding(2, H)
        self.LayerNorm = nn.LayerNorm(H, eps=1e-12)
        self.dropout = nn.Dropout(0.0)
        self.register_buffer("position_ids", torch.arange(P).expand((1, -1)), persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long), persistent=False)
    def forward(self, input_ids=None, token_type_ids=None, position_ids=None, past_key_values_length=0):
        input_shape = input_ids.size()
        seq_length = input_shape[1]
        if position_ids is None:
            position_ids = self.position_ids[:, past_key_values_length : seq_length + past_key_values_length]
        if token_type_ids is None:
            if hasattr(self, "token_type_ids"):
                buffered_token_type_ids = self.token_type_ids[:, :seq_length]
                token_type_ids = buffered_token_type_ids.expand(input_shape[0], seq_length)
            else:
                token_type_ids = torch.zeros(input_shape, dtype=torch.long, device=self.position_ids.device)
        emb = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids) + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(emb))

class BertSelfAttention(nn.Module):
    def __init__(self, H, nh):
        super().__init__()
        self.num_attention_heads = nh
        self.attention_head_size = int(H / nh)
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(H, self.all_head_size); self.key = nn.Linear(H, self.all_head_size); self.value = nn.Linear(H, self.all_head_size)
        self.dropout = nn.Dropout(0.0)
    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)
    def forward(self, hidden_states, attention_mask=None, head_mask=None, output_attentions=False):
        q = self.transpose_for_scores(self.query(hidden_states))
        k = self.transpose_for_scores(self.key(hidden_states))
        v = self.transpose_for_scores(self.value(hidden_states))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            scores = scores + attention_mask
        probs = self.dropout(nn.functional.softmax(scores, dim=-1))
        if head_mask is not None:
            probs = probs * head_mask
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.size()[:-2] + (self.all_head_size,))
        return (ctx, probs) if output_attentions else (ctx,)

class BertLayer(nn.Module):
    def __init__(self, H, nh):
        super().__init__()
        self.attention = BertSelfAttention(H, nh)
        self.attn_out = nn.Linear(H, H); self.ln1 = nn.LayerNorm(H, eps=1e-12)
        self.intermediate = nn.Linear(H, 4 * H); self.output = nn.Linear(4 * H, H); self.ln2 = nn.LayerNorm(H, eps=1e-12)
    def forward(self, h, mask):
        a = self.attention(h, mask)[0]
        h = self.ln1(self.attn_out(a) + h)
        return self.ln2(self.output(F.gelu(self.intermediate(h))) + h)

class BertModel(nn.Module):
    def __init__(self, V=60, H=32, nh=4, L=2, P=64):
        super().__init__()
        self.embeddings = BertEmbeddings(V, H, P)
        self.layer = nn.ModuleList([BertLayer(H, nh) for _ in range(L)])
        self.pooler = nn.Linear(H, H)
        self.mlm = nn.Linear(H, V); self.nsp = nn.Linear(H, 2)
    @property
    def dtype(self):
        return next(self.parameters()).dtype
    def get_extended_attention_mask(self, attention_mask, input_shape, dtype=None):
        if dtype is None:
            dtype = self.dtype
        if attention_mask.dim() == 3:
            extended = attention_mask[:, None, :, :]
        elif attention_mask.dim() == 2:
            extended = attention_mask[:, None, None, :]
        else:
            raise ValueError(f"Wrong shape for input_ids (shape {input_shape}) or attention_mask (shape {attention_mask.shape})")
        extended = extended.to(dtype=dtype)
        return (1.0 - extended) * torch.finfo(dtype).min
    def forward(self, input_ids, attention_mask=None, token_type_ids=None, return_dict=True):
        input_shape = input_ids.size()
        if attention_mask is None:
            attention_mask = torch.ones(input_shape, device=input_ids.device)
        ext = self.get_extended_attention_mask(attention_mask, input_shape)
        h = self.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
        all_hidden = ()
        for i, layer_module in enumerate(self.layer):
            all_hidden = all_hidden + (h,)
            h = layer_module(h, ext)
        pooled = torch.tanh(self.pooler(h[:, 0]))
        out = {"last_hidden_state": h, "pooler_output": pooled, "mlm": self.mlm(h), "nsp": self.nsp(pooled)}
        return out if return_dict else tuple(out.values())

torch.manual_seed(0)
m = BertModel()
ids = torch.randint(1, 60, (2, 10)); am = torch.ones(2, 10, dtype=torch.long); am[0, 7:] = 0
labels = ids.clone(); labels[:, ::2] = -100
nsp = torch.tensor([0, 1])
def loss_fn(model, ids, am):
    out = model(ids, attention_mask=am)
    loss_fct = nn.CrossEntropyLoss()
    mlm = loss_fct(out["mlm"].view(-1, 60), labels.view(-1))
    return mlm + loss_fct(out["nsp"].view(-1, 2), nsp.view(-1))
run("bert_ext_mask", m, (ids, am), loss_fn)
