"""Issue 42: idioms of public model programs found by the s21 probes
(tests/probes p12-p26) traced whole:
- `del lst[:]`, `del lst[i]`, `del d[k]` (DELETE_SUBSCR) on lists and dicts
  made in the frame or passed in (pytorch/examples' actor_critic and
  reinforce clear `policy.rewards` and `saved_actions` after each episode);
  what Python raises on (an index out of range, a missing key) breaks the
  graph and CPython raises it;
- a namedtuple passed in (actor_critic's `SavedAction(log_prob, value)`
  kept in a list): unpacked, iterated and read by field name;
- a C method of a list, dict or tensor input kept in a local across a graph
  break (`app = lst.append`, `get = d.get`): guarded as that method of that
  input, not by the identity of a method object made afresh by every read,
  so the resumed frame compiles once instead of up to the cache limit;
- numpy's spellings of `dim`/`keepdim` (`torch.stack(xs, axis=-1)` in
  RAFT's CorrBlock, `x.sum(axis=1, keepdims=True)`);
- `k in d` with a tuple key built in the frame (RIFE's backwarp grid cache
  `k = (str(device), str(size))`);
- `torch.tensor([R])` of 0-d tensors (actor_critic's
  `F.smooth_l1_loss(value, torch.tensor([R]))`, R from iterating a tensor):
  their values, detached, in their dtype; mixed with Python numbers or of
  mixed dtypes it still breaks;
- `t.new_tensor(data)` (fast_neural_style's
  `batch.new_tensor([0.485, 0.456, 0.406])`): t's dtype and device unless
  named;
- `x.repeat_interleave(n, dim)` and `torch.cdist` (with its backward): shape
  rules for the ops LibTorch 1.13 has no meta kernel for (they were internal
  errors, run op by op);
- shape rules for kthvalue, median(dim), mode, cummax/cummin, bucketize,
  searchsorted (NeRF's hierarchical sampling), which broke the graph (no
  meta kernel);
- `itertools.repeat(x, n)` with a constant count (torch's `_ntuple`, which
  F.unfold/F.fold/F.max_unpool2d call on their sizes);
- `torch.cuda.is_available()` (and mps/cudnn/mkldnn's) folded: fixed for
  the process;
- `x.type(torch.FloatTensor)` / `x.type('torch.DoubleTensor')`: to(dtype)
  (a CUDA type still breaks)."""
from collections import namedtuple

import torch
import torch.nn.functional as F

import tracejit
from capture_util import expect, same
from e2e_util import BACKEND, check, check_equal, finish

torch.manual_seed(0)
x = torch.randn(4, 3)


def clear_lists(t, rewards, saved, d):
    total = t * len(rewards)
    del rewards[:]
    del saved[1]
    del saved[-1]
    del d["a"]
    return total + len(saved) + len(d), rewards, saved, d


expect("del lst[:], del lst[i], del d[k] on inputs", clear_lists, (x, [1.0, 2.0], [1, 2, 3, 4], {"a": 1, "b": 2}),
       make_args=lambda: (x, [1.0, 2.0], [1, 2, 3, 4], {"a": 1, "b": 2}))


def clear_own(t):
    xs = [t, t + 1, t + 2, t + 3]
    del xs[1:3]
    d = {"p": t * 2, "q": t * 3}
    del d["p"]
    return xs[0] + xs[1] + d["q"], len(xs)


expect("del on a list and dict made in the frame", clear_own, (x,))


def check_del_effects():
    tracejit.reset()
    rewards, saved = [1.0, 2.0, 3.0], ["a", "b", "c"]
    d = {"a": 1, "b": 2}
    out = tracejit.compile(clear_lists, backend=BACKEND)(x, rewards, saved, d)
    check(rewards == [] and saved == ["a"] and d == {"b": 2}, "deletions reach the lists and dict passed in")
    check(out[1] is rewards and out[3] is d, "the mutated inputs are returned as themselves")


check_del_effects()


def del_out_of_range(t, lst):
    y = t * 2
    del lst[5]
    return y


def check_del_raises():
    tracejit.reset()
    f = tracejit.compile(del_out_of_range, backend=BACKEND)
    try:
        f(x, [1, 2])
        check(False, "del lst[5] of a 2-list raises IndexError")
    except IndexError:
        check(True, "del lst[5] of a 2-list raises IndexError")
    ex = tracejit.explain(del_out_of_range)(x, [1] * 6)
    check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "del lst[5] of a 6-list: one graph")


check_del_raises()


def raises_as_eager(fn, args, what):
    """fn(*args) compiled raises what eager raises: type and message."""
    tracejit.reset()

    def outcome(f):
        try:
            f(*args)
            return None
        except Exception as e:  # noqa: BLE001 (compared whole)
            return (type(e).__name__, str(e))

    want = outcome(fn)
    got = outcome(tracejit.compile(fn, backend=BACKEND))
    check(want is not None and got == want, f"{what}: raises as eager ({want} / {got})")


def del_huge_index(t, lst):
    y = t * 2
    del lst[2 ** 70]
    return y


def del_zero_step(t, lst):
    y = t * 2
    del lst[::0]
    return y


def del_from_own_set(t):
    s = {1, 2}
    y = t * 2
    del s[1]
    return y


raises_as_eager(del_huge_index, (x, [1, 2]), "del lst[2**70]")
raises_as_eager(del_zero_step, (x, [1, 2]), "del lst[::0]")
raises_as_eager(del_from_own_set, (x,), "del s[k] of a set made in the frame")

SavedAction = namedtuple('SavedAction', ['log_prob', 'value'])


def episode_loss(saved_actions, returns):
    policy_losses, value_losses = [], []
    for (log_prob, value), R in zip(saved_actions, returns):
        advantage = R - value.detach()
        policy_losses.append(-log_prob * advantage)
        value_losses.append(F.smooth_l1_loss(value, R.reshape(1)))
    first = saved_actions[0]
    return torch.stack(policy_losses).sum() + torch.stack(value_losses).sum() + first.log_prob * 0


saved = [SavedAction(torch.randn(()), torch.randn(1)) for _ in range(4)]
expect("a list of namedtuples passed in: unpacked, iterated, fields by name", episode_loss, (saved, torch.randn(4)))
expect("a namedtuple passed in returned", lambda s, t: (s, s.value + t), (saved[0], x))


def check_namedtuple_guard():
    tracejit.reset()
    f = tracejit.compile(lambda s: s[0] + s[1], backend=BACKEND)
    Other = namedtuple('Other', ['a', 'b', 'c'])
    check(same(f(SavedAction(x, x * 2)), x + x * 2), "a namedtuple of two")
    check(same(f(SavedAction(x * 3, x)), x * 3 + x), "the same class again")
    check_equal(tracejit.counters()["recompiles"], 0, "the same namedtuple class: no recompile")
    check(same(f(Other(x, x * 2, x)), x + x * 2), "another namedtuple class of three: as eager")
    check_equal(tracejit.counters()["recompiles"], 1, "another namedtuple class: its class guard fails, recompiled")
    check(same(f((x, x * 3)), x + x * 3), "a plain tuple: as eager")
    check_equal(tracejit.counters()["recompiles"], 2, "a plain tuple: recompiled")


check_namedtuple_guard()


def bound_method_across_break(t, lst, d):
    y = t.sin()
    app = lst.append
    get = d.get
    print("graph break")
    app(y.sum())
    return y.cos() * get("k", 1.0)


def check_bound_methods():
    tracejit.reset()
    f = tracejit.compile(bound_method_across_break, backend=BACKEND)
    d = {"k": 2.0}
    for i in range(12):
        lst = []
        got = f(x, lst, d)
        if i == 0:
            check(len(lst) == 1 and same(lst[0], x.sin().sum()), "the bound append reached the list passed in")
            check(same(got, x.sin().cos() * 2.0), "values as eager")
    c = tracejit.counters()
    check(c["recompiles"] == 0, f"one compile for every call (recompiles={c['recompiles']})")
    lst = []
    got = f(x, lst, {"k": 3.0})
    check(same(got, x.sin().cos() * 3.0) and len(lst) == 1, "another dict: its own value")


check_bound_methods()


def pop_then_append(t, lst):
    m = lst.pop
    print("graph break")
    return t * m()


def check_method_name_guard():
    tracejit.reset()
    f = tracejit.compile(pop_then_append, backend=BACKEND)
    check(same(f(x, [1.0, 2.0]), x * 2.0), "lst.pop kept across a break")
    check(same(f(x, [5.0]), x * 5.0), "lst.pop of another list: its own item")


check_method_name_guard()
expect("torch.stack(axis=), sum(axis=, keepdims=)",
       lambda t: torch.stack([t, t * 2], axis=-1).sum(axis=1, keepdims=True), (x,))
expect("torch.cat(axis=) and mean(axis=)", lambda t: torch.cat([t, t], axis=0).mean(axis=0), (x,))

grid_cache = {}


def warp(img, flow):
    k = (str(flow.device), str(flow.size()))
    if k not in grid_cache:
        grid_cache[k] = torch.linspace(-1.0, 1.0, flow.shape[3]).view(1, 1, 1, -1).expand(flow.shape[0], 2, flow.shape[2], -1)
    g = (grid_cache[k] + flow).permute(0, 2, 3, 1)
    return F.grid_sample(img, g, align_corners=True)


img = torch.randn(1, 3, 8, 8)
flow = torch.randn(1, 2, 8, 8) * 0.1


def check_grid_cache():
    grid_cache.clear()
    want = warp(img, flow)
    grid_cache.clear()
    tracejit.reset()
    f = tracejit.compile(warp, backend=BACKEND)
    check(same(f(img, flow), want), "first call (the cache filled): as eager")
    check(len(grid_cache) == 1, "the cache holds the grid after the first call")
    check(same(f(img, flow), want), "second call (the cache read): as eager")
    ex = tracejit.explain(warp)(img, flow)
    check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "a tuple key `in` a global dict: one graph")


check_grid_cache()


def returns_loss(values, returns):
    losses = []
    for value, R in zip(values, returns):
        losses.append(F.smooth_l1_loss(value, torch.tensor([R])))
    return torch.stack(losses).sum(), torch.tensor([[returns[0], returns[1]], [returns[2], returns[3]]])


vals = torch.randn(4, 1, requires_grad=True)
rets = torch.randn(4, dtype=torch.float64)
expect("torch.tensor([R]) of 0-d tensors from iterating a tensor", returns_loss, (vals, rets))
expect("torch.tensor of 0-d tensors with dtype=", lambda t: torch.tensor([t[0], t[1]], dtype=torch.float16), (x[0],))


def check_tensor_of_tensors_detached():
    tracejit.reset()
    got = tracejit.compile(lambda v: torch.tensor([v[0], v[1]]), backend=BACKEND)(vals.view(-1))
    check(not got.requires_grad and got.dtype == torch.float32, "torch.tensor of 0-d tensors requiring grad: detached")
    check(same(got, vals.view(-1)[:2].detach()), "torch.tensor of 0-d tensors requiring grad: their values")


check_tensor_of_tensors_detached()
expect("torch.tensor of a 0-d tensor and a Python number: a break", lambda t: t[:, :2] + torch.tensor([t.sum(), 1.0]),
       (x,), graphs=2, breaks=1)


def normalize_batch(batch):
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    return (batch / 255.0 - mean) / std


imgs = torch.rand(2, 3, 4, 4, dtype=torch.float64) * 255
expect("Tensor.new_tensor of constants (t's dtype)", normalize_batch, (imgs,))
expect("Tensor.new_tensor with dtype=", lambda t: t.new_tensor([1, 2, 3], dtype=torch.int32) + t.new_tensor(2), (x,))
expect("repeat_interleave(int, dim)", lambda t: t.repeat_interleave(2, dim=0) + 1, (x,))
expect("repeat_interleave(int) flattened", lambda t: torch.repeat_interleave(t, 3) * 2, (x,))
expect("torch.cdist", lambda t: torch.cdist(t, t * 2), (x,))
expect("torch.cdist batched, p=1", lambda t: torch.cdist(t.view(2, 2, 3), t.view(2, 2, 3).flip(1), p=1.0), (x,))


def cdist_step(a, b):
    loss = torch.cdist(a, b).pow(2).mean()
    loss.backward()
    return loss.detach(), a.grad


def check_cdist_training():
    a0, b0 = torch.randn(5, 3), torch.randn(4, 3)
    a1 = a0.clone().requires_grad_()
    want = cdist_step(a1, b0)
    tracejit.reset()
    a2 = a0.clone().requires_grad_()
    got = tracejit.compile(cdist_step, backend=BACKEND)(a2, b0)
    check(same(list(got), list(want)), "cdist in a training step: loss and gradient as eager")
    check(tracejit.counters()["internal_errors"] == 0, "cdist: no internal error")


check_cdist_training()
expect("kthvalue, median(dim), mode", lambda t: t.kthvalue(2, dim=1).values + t.median(dim=1).values
       + t.round().mode(dim=0, keepdim=True).values.sum() + t.median(0)[1].sum(), (x,))
expect("cummax, cummin", lambda t: t.cummax(dim=1).values * t.cummin(0)[1], (x,))
bins = torch.tensor([-1.0, 0.0, 1.0])
expect("bucketize, searchsorted", lambda t: torch.bucketize(t, bins) + torch.searchsorted(bins, t.contiguous(), right=True)
       + torch.bucketize(t, bins, out_int32=True), (x,))


def check_compiled_whole(what, fn, args):
    """On a compiling backend the graph is captured by AOT and runs
    compiled: no op-by-op fallback, no internal error."""
    if BACKEND == "eager":
        return
    tracejit.reset()
    f = tracejit.compile(fn, backend=BACKEND)
    f(*args)
    f(*args)
    c = tracejit.counters()
    check(c["aot_captures"] >= 1, f"{what}: captured by AOT ({c['aot_captures']})")
    check_equal((c["internal_errors"], c["backend_fallbacks"], c["aot_runs_op_by_op"]), (0, 0, 0),
                f"{what}: no internal error, no fallback, nothing op by op")


check_compiled_whole("repeat_interleave(int, dim)", lambda t: t.repeat_interleave(2, dim=0) + 1, (x,))
check_compiled_whole("torch.cdist", lambda t: torch.cdist(t, t * 2), (x,))
check_compiled_whole("kthvalue, median(dim), mode", lambda t: t.kthvalue(2, dim=1).values + t.median(dim=1).values
                     + t.mode(dim=0).values.sum(), (x,))
check_compiled_whole("cummax, cummin", lambda t: t.cummax(dim=1).values * t.cummin(0)[1], (x,))
check_compiled_whole("bucketize, searchsorted",
                     lambda t: torch.bucketize(t, bins) + torch.searchsorted(bins, t.contiguous(), right=True), (x,))


def sample_pdf(bins, weights, u):
    # NeRF's hierarchical sampling: invert the CDF with searchsorted
    pdf = weights / torch.sum(weights, -1, keepdim=True)
    cdf = torch.cumsum(pdf, -1)
    cdf = torch.cat([torch.zeros_like(cdf[..., :1]), cdf], -1)
    inds = torch.searchsorted(cdf, u.contiguous(), right=True)
    below = torch.max(torch.zeros_like(inds - 1), inds - 1)
    above = torch.min((cdf.shape[-1] - 1) * torch.ones_like(inds), inds)
    inds_g = torch.stack([below, above], -1)
    shape = [inds_g.shape[0], inds_g.shape[1], cdf.shape[-1]]
    cdf_g = torch.gather(cdf.unsqueeze(1).expand(shape), 2, inds_g)
    bins_g = torch.gather(bins.unsqueeze(1).expand(shape), 2, inds_g)
    denom = cdf_g[..., 1] - cdf_g[..., 0]
    denom = torch.where(denom < 1e-5, torch.ones_like(denom), denom)
    t = (u - cdf_g[..., 0]) / denom
    return bins_g[..., 0] + t * (bins_g[..., 1] - bins_g[..., 0])


expect("NeRF sample_pdf (searchsorted)", sample_pdf, (torch.linspace(0, 1, 9).expand(4, 9).contiguous(), torch.rand(4, 8) + 0.1,
                                                       torch.rand(4, 5)))
expect("F.unfold / F.fold (torch's _ntuple: itertools.repeat)",
       lambda t: F.fold(F.unfold(t.view(1, 1, 4, 3), kernel_size=2), (4, 3), kernel_size=2), (x,))


def repeats(t):
    import itertools
    parts = list(itertools.repeat(t, 3))
    return torch.cat(parts) + len(tuple(itertools.repeat(1, 0)))


expect("itertools.repeat(x, n)", repeats, (x,))
expect("torch.cuda.is_available() in forward", lambda t: t.cuda() if torch.cuda.is_available() else t * 3, (x,))
expect("torch.backends.cudnn/mkldnn.is_available()",
       lambda t: t * (2 if torch.backends.mkldnn.is_available() else 5) + int(torch.backends.cudnn.is_available()), (x,))
expect("x.type(torch.FloatTensor) of a bool tensor", lambda t: (t > 0).type(torch.FloatTensor) * t, (x,))
expect("x.type('torch.DoubleTensor')", lambda t: t.type('torch.DoubleTensor') + 1, (x,))
expect("x.type(torch.LongTensor) of its own type", lambda t: t.long().type(torch.LongTensor) + 1, (x,))
finish()
