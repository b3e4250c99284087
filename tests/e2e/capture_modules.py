"""Issue 42, item 1: constructs of real model code traced into one graph
with eager's values: LSTM/GRU modules (aten::lstm/gru with the weight list),
losses over images (cross_entropy / nll_loss on (N, C, H, W): shape rules
where 1.13 has no meta kernel), one_hot with num_classes, torch.sparse.mm /
torch.spmm, a loss module made inside the function (`nn.MSELoss()`),
functools.wraps and copy.deepcopy at trace time, and the globals of a
function from another module reached without a source. Data-dependent ones
(masked_select, one_hot without num_classes) break with that reason."""
import copy
import functools
import io

import torch
import torch.nn as nn
import torch.nn.functional as F

import capture_globals_mod
import tracejit
from capture_util import expect
from e2e_util import BACKEND, check, finish

torch.manual_seed(0)
x = torch.randn(4, 8)

# LSTM / GRU / RNN modules
lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True)
gru = nn.GRU(8, 16)
rnn = nn.RNN(8, 16, bidirectional=True)
seq = torch.randn(2, 5, 8)
expect("nn.LSTM (batch_first, 2 layers)", lambda s: lstm(s)[0], (seq,))
expect("nn.LSTM with (h, c) given", lambda s, h, c: lstm(s, (h, c))[1][1], (seq, torch.randn(2, 2, 16), torch.randn(2, 2, 16)))
expect("nn.LSTM after lstm.flatten_parameters() (word_language_model's forward)",
       lambda s: (lstm.flatten_parameters(), lstm(s)[0])[1], (seq,))
expect("nn.GRU", lambda s: gru(s)[0].sum(0), (seq,))
expect("nn.RNN bidirectional", lambda s: rnn(s)[1], (seq,))

# losses over images (nll_loss2d), with class and probability targets
img = torch.randn(2, 3, 4, 4)
cls = torch.randint(0, 3, (2, 4, 4))
expect("cross_entropy on (N, C, H, W)", lambda t, y: F.cross_entropy(t, y), (img, cls))
expect("cross_entropy on images, reduction='none'", lambda t, y: F.cross_entropy(t, y, reduction="none"), (img, cls))
expect("cross_entropy on images, probability targets", lambda t, p: F.cross_entropy(t, p.softmax(1)), (img, torch.randn(2, 3, 4, 4)))
expect("nll_loss on (N, C, H, W)", lambda t, y: F.nll_loss(F.log_softmax(t, 1), y, reduction="sum"), (img, cls))
expect("nll_loss on (N, C, H, W, D), ignore_index", lambda t, y: F.nll_loss(t, y, ignore_index=1),
       (torch.randn(2, 3, 2, 2, 2), torch.randint(0, 3, (2, 2, 2, 2))))

# one_hot, masked_select
idx = torch.tensor([1, 0, 3])
expect("F.one_hot(num_classes=8)", lambda i: F.one_hot(i, num_classes=8).float() * 2, (idx,))
ex = expect("F.one_hot without num_classes (data-dependent)", lambda i: F.one_hot(i) * 2, (idx,), graphs=1, breaks=1)
check("data-dependent" in ex.break_reasons[0].reason, "one_hot without num_classes: the reason says data-dependent")
expect("masked_select stays in the graph (its size is known when it runs)",
       lambda t: torch.masked_select(t * 2, t > 0) + 1, (x,))

# sparse @ dense
sp = torch.randn(4, 4).relu().to_sparse()
dense = torch.randn(4, 3)
expect("torch.sparse.mm(sparse, dense)", lambda d: torch.sparse.mm(sp, d * 2) + 1, (dense,))
expect("torch.spmm(sparse, dense)", lambda d: torch.spmm(sp, d) * 3, (dense,))
expect("torch.sparse.mm of a sparse input", lambda s, d: torch.sparse.mm(s, d).relu(), (sp, dense))

# a loss module made inside the function
expect("nn.MSELoss() made in the frame", lambda t: nn.MSELoss()(t, t.flip(0)), (x,))
expect("nn.CrossEntropyLoss(reduction='sum') made in the frame",
       lambda t: nn.CrossEntropyLoss(reduction="sum")(t, torch.tensor([0, 1, 2, 3])), (x,))
expect("nn.ReLU() made in the frame", lambda t: nn.ReLU()(t - 0.5), (x,))
ex = expect("nn.Linear made in the frame (holds parameters): a break",
            lambda t: nn.Linear(8, 2)(t).shape, (x,), graphs=1, breaks=1)
check("parameters" in ex.break_reasons[0].reason, "nn.Linear made in the frame: the reason names its parameters")
expect("a module made in the frame, used in a tuple", lambda t: (nn.ReLU(), t + 1)[1], (x,))


# functools.wraps at trace time
def decorate(f):
    @functools.wraps(f)
    def wrapper(*args):
        return f(*args) + 1

    return wrapper


def inner(t):
    return t * 2


expect("functools.wraps applied in the frame", lambda t: decorate(inner)(t), (x,))


# copy.deepcopy at trace time
def deepcopy_tensor(t):
    c = copy.deepcopy(t)
    c.mul_(2)  # a copy: t is unchanged
    return c + t


expect("copy.deepcopy of a tensor", deepcopy_tensor, (x,), make_args=lambda: (x.clone(),))
check(torch.equal(tracejit.compile(lambda t: copy.deepcopy(t).add_(1), backend=BACKEND)(x.clone()), x + 1),
      "copy.deepcopy: the copy is written, not the input")

# a function of another module reached without a source reads that module's globals
expect("globals of a function handed back by a call", lambda t: capture_globals_mod.get_helper()(t), (x,))
compiled_helper = tracejit.compile(lambda t: capture_globals_mod.get_helper()(t), backend=BACKEND)
compiled_helper(x)
capture_globals_mod.SCALE = 5.0
check(torch.allclose(compiled_helper(x), x * 5.0 + 0.5), "globals of another module: a changed global is read again")
capture_globals_mod.SCALE = 3.0


# an iterator of a tuple live across a break is rebuilt as a tuple_iterator
_sink = io.StringIO()


def tuple_iterator_across_break(t):
    it = iter((t, t * 2, t * 3))
    first = next(it)
    print("break", file=_sink)  # a graph break with `it` live
    return first + next(it), type(it).__name__


want = tuple_iterator_across_break(x)
got = tracejit.compile(tuple_iterator_across_break, backend=BACKEND)(x)
check(torch.allclose(got[0], want[0]) and got[1] == want[1] == "tuple_iterator",
      "a tuple_iterator across a break: same values, still a tuple_iterator")
ex = tracejit.explain(tuple_iterator_across_break)(x)
check(not any("cannot leave a compiled graph" in r.reason for r in ex.break_reasons) and ex.graph_count >= 1,
      "a tuple_iterator across a break: the first graph is kept "
      f"({'; '.join(r.reason[:80] for r in ex.break_reasons)})")


# a loop over enumerate / zip / a list whose body breaks: the iterator crosses
# each break (resumed where it stands), one break per iteration's print
def loop_enumerate(ts):
    out = []
    for i, t in enumerate(ts):
        if i == 1:
            print("break", file=_sink)
        out.append(t * 2)
    return out


def loop_zip(ts, us):
    out = 0
    for a, b in zip(ts, us):
        print("break", file=_sink)
        out = out + a * b
    return out


def loop_list(ts):
    out = 0
    for a in ts:
        print("break", file=_sink)
        out = out + a
    return out


ts, us = [torch.randn(3) for _ in range(3)], [torch.randn(3) for _ in range(3)]
expect("enumerate() across a break", loop_enumerate, (ts,), graphs=2, breaks=1)
expect("zip() across a break in each iteration", loop_zip, (ts, us), graphs=3, breaks=3)
expect("a list_iterator across a break in each iteration", loop_list, (ts,), graphs=3, breaks=3)

finish()
