"""Issue 11: sets and set operations (sets of constants, and sets of tensors
and modules keyed by identity), collections.OrderedDict/defaultdict
and collections.namedtuple made inside the traced function, tensors as
dict keys (by identity), torch.manual_seed (traced before the graph's first
random op: the seed is set before the graph runs; after one, a break with
its reason; the random numbers either way are eager's)."""
import collections

import torch

import tracejit
from capture_util import expect, same
from e2e_util import BACKEND, check, check_equal, finish

x = torch.randn(4, 6)
y = torch.randn(4, 6)


def set_ops(t):
    s = {1, 2}
    s.add(3)
    s |= {7}
    s.discard(2)
    u = s | {5}
    common = u & {1, 5, 9}
    return t * len(u) + len(common) + int(3 in s) - int(2 in s), sorted(s - {1}), s


expect("set literal, add/discard, | & - |=, in, len", set_ops, (x,))
expect("set comprehension and set()", lambda t: t * len({v % 3 for v in range(10)}) + len(set([1, 1, 2])), (x,))
expect("set of a tensor's shape", lambda t: t + len(set(t.shape)) + len(frozenset([1, 2])), (x,))


def set_aliases(t):
    a = set()
    b = a
    b.add(1)
    return t + len(a), a, b


def check_set_identity():
    tracejit.reset()
    _, a, b = tracejit.compile(set_aliases, backend=BACKEND)(x)
    check(a is b and a == {1}, "a set returned twice is one set, with its contents")
    _, a2, _ = tracejit.compile(set_aliases, backend=BACKEND)(x)
    check(a2 is not a, "each call returns a new set")


check_set_identity()
# Sets of tensors and modules (keyed by identity, as their hash is id)
expect("set of tensors", lambda t: t * len({t, t + 1, t}), (x,))
model = torch.nn.Sequential(torch.nn.Linear(6, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))


def tensor_set(t):
    s = {t, t * 2}
    u = t + 1
    s.add(u)
    s.add(u)
    s.add(t)
    s.discard(t * 3)
    return len(s), t in s, u in s, (t + 3) in s, sum(v.sum() for v in s)


def parameter_sets(t):
    params = set(model.parameters())
    w = model[0].weight
    n = sum(1 for p in model.parameters() if p in params)
    params.discard(w)
    rest = params - {model[2].weight}
    both = params | {w}
    return n, len(params), w in params, len(rest), len(both), len(params ^ both), params.issubset(both), \
        sum(p.sum() for p in rest) + t.sum()


def module_sets(t):
    s = set(model.modules())
    pair = {model[0], model[1]}
    return len(s), len(s - pair), len(s & pair), pair.issubset(s), type(s).__name__, isinstance(pair, set), t * 2


def regularized_loss(t):
    # model.parameters() / named_parameters() / named_modules() use a memo set
    reg = sum(p.pow(2).sum() for p in model.parameters())
    names = [n for n, _ in model.named_parameters()]
    return model(t).sum() + 0.01 * reg, names, len(list(model.named_modules()))


expect("a set of tensors: add, discard, in, len, iteration", tensor_set, (x,))
expect("sets of parameters: set(model.parameters()), in, discard, | - ^, issubset", parameter_sets, (x,))
expect("sets of modules", module_sets, (x,))
expect("model.parameters() / named_parameters() / named_modules() in a traced function", regularized_loss, (x,))
tracejit.reset()
returned = tracejit.compile(lambda t: (t + 1, set(model.parameters()), frozenset([model[0]])), backend=BACKEND)(x)
check_equal((type(returned[1]), type(returned[2])), (set, frozenset), "a set of parameters leaves the graph as a set")
check(returned[1] == set(model.parameters()) and returned[2] == frozenset([model[0]]),
      "a returned set of parameters holds the parameters themselves")


def ordered(t):
    d = collections.OrderedDict()
    d["b"] = t
    d["a"] = t + 1
    return d, list(d.keys())


expect("OrderedDict made in the frame", ordered, (x,))


def default(t):
    d = collections.defaultdict(list)
    d["a"].append(t)
    d["a"].append(t * 2)
    d["b"].append(t + 3)
    counts = collections.defaultdict(int)
    for k in ["x", "y", "x"]:
        counts[k] += 1
    return d["a"][1] + d["b"][0] * counts["x"], d, counts


expect("defaultdict made in the frame", default, (x,))


def check_defaultdict_type():
    tracejit.reset()
    _, d, counts = tracejit.compile(default, backend=BACKEND)(x)
    check(type(d) is collections.defaultdict and d.default_factory is list, "a returned defaultdict keeps its type and factory")
    check_equal(dict(counts), {"x": 2, "y": 1}, "defaultdict(int) counts")


check_defaultdict_type()


def namedtuple_inside(t):
    Point = collections.namedtuple("Point", ["a", "b"])
    p = Point(t, 2)
    q = p._replace(b=3) if False else Point(p.a + 1, b=p.b * 2)
    return q.a * q.b, q.b


expect("collections.namedtuple made inside", namedtuple_inside, (x,))


def tensor_keys(t, u):
    d = {t: "first", u: "second"}
    d[t] = "again"
    state = {}
    state[t] = t * 2
    return state[t] + (u if d[u] == "second" else t), len(d), t in state, u in state


expect("tensors as dict keys (identity)", tensor_keys, (x, y))


def check_key_identity_guard():
    # Traced with two tensors, then called with one tensor twice: the dict
    # has one key then (Python hashes tensors by identity), so the trace
    # that told them apart must not be reused.
    tracejit.reset()
    compiled = tracejit.compile(tensor_keys, backend=BACKEND)
    compiled(x, y)
    got = compiled(x, x)
    want = tensor_keys(x, x)
    check(torch.allclose(got[0], want[0]) and got[1:] == want[1:], "a tensor passed twice is one dict key, as in eager")


check_key_identity_guard()


def keyed_input(d, t):
    return d[t] * 2 + t


expect("a dict input keyed by tensors", keyed_input, ({x: torch.ones(4, 6), y: torch.zeros(4, 6)}, x))


def seeded(t):
    torch.manual_seed(1234)
    return t + torch.randn(4, 6)


expect("torch.manual_seed then randn (values as eager)", seeded, (x,))


def draws_after(fn, *args):
    """fn's result and the next draws of the default generator."""
    out = fn(*args)
    return out, torch.rand(5)


def check_seeded(name, fn, args_list, graphs=1, breaks=0, traces=1):
    """Each call's result and the generator's next draws equal eager's (from
    the same state, which the seed must replace)."""
    tracejit.reset()
    compiled = tracejit.compile(fn, backend=BACKEND)
    for i, args in enumerate(args_list):
        torch.manual_seed(99 + i)
        want = draws_after(fn, *args)
        torch.manual_seed(99 + i)
        got = draws_after(compiled, *args)
        check(same(got, want), f"{name}: call {i} and the draws after it as eager")
    check_equal(tracejit.counters()["frames_traced"], traces, f"{name}: frames traced")
    ex = tracejit.explain(fn)(*args_list[0])
    reasons = "; ".join(r.reason[:160] for r in ex.break_reasons[:3])
    check_equal((ex.graph_count, ex.graph_break_count), (graphs, breaks), f"{name}: graphs/breaks ({reasons})")
    return ex


def dropout_after_seed(t, seed):
    g = torch.manual_seed(seed)
    a = torch.nn.functional.dropout(t, 0.5, training=True)
    return a + torch.rand_like(t) * 2, g is torch.default_generator


check_seeded("seed from an argument, dropout and rand_like; the generator returned", dropout_after_seed,
             [(x, 7), (x, 7), (x, 8)], traces=2)
check_seeded("keyword seed, no random op in the graph", lambda t: (torch.manual_seed(seed=3), t * 2)[1], [(x,), (x,)])
check_seeded("two seeds before any draw: the last one counts",
             lambda t: (torch.manual_seed(1), torch.manual_seed(2), t + torch.randn(4, 6))[2], [(x,)])


def reseed_between_draws(t):
    a = torch.randn(4, 6)
    torch.manual_seed(5)
    return t + a + torch.randn(4, 6)


ex = check_seeded("a seed between two draws", reseed_between_draws, [(x,), (x,)], graphs=2, breaks=1, traces=2)
check(any("manual_seed after a random op" in r.reason for r in ex.break_reasons),
      "the break reason says the seed comes after a random op")
check_seeded("a seed that is not an int breaks", lambda t, s: (torch.manual_seed(s), t + torch.randn(4, 6))[1],
             [(x, torch.tensor(4))], graphs=1, breaks=1, traces=2)


# torch.seed(): a new random seed, replayed before the graph; what it
# returned is the seed the graph's draws came from.
def fresh_seed(t):
    s = torch.seed()
    return t + torch.rand(4, 6), s


tracejit.reset()
seeded_fn = tracejit.compile(fresh_seed, backend=BACKEND)
results = [seeded_fn(x) for _ in range(3)]
ok = True
for out, s in results:
    torch.manual_seed(s)
    ok = ok and type(s) is int and torch.equal(out, x + torch.rand(4, 6))
check(ok, "torch.seed(): an int, and the graph's draws are the generator's seeded with it")
check(len({s for _, s in results}) == 3, "torch.seed(): a new seed on every call")
check_equal(tracejit.counters()["frames_traced"], 1, "torch.seed(): one trace")
ex = tracejit.explain(fresh_seed)(x)
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "torch.seed(): one graph, no break")
check_seeded("torch.seed() then manual_seed: the last reseed counts",
             lambda t: (torch.seed(), torch.manual_seed(7), t + torch.randn(4, 6))[2], [(x,), (x,)])
# (the draws after a torch.seed() are new ones: only the break is checked here)
ex = tracejit.explain(lambda t: (torch.randn(4, 6), torch.seed(), t + 1)[2])(x)
check_equal((ex.graph_count, ex.graph_break_count), (2, 1), "torch.seed() after a random op breaks (a graph before, one after)")
check(any("torch.seed() after a random op" in r.reason for r in ex.break_reasons), "its reason names torch.seed()")


def seed_then_reseed(t):
    s = torch.seed()
    torch.manual_seed(3)
    return t + torch.rand(4, 6), s


tracejit.reset()
out, s = tracejit.compile(seed_then_reseed, backend=BACKEND)(x)
torch.manual_seed(3)
check(type(s) is int and torch.equal(out, x + torch.rand(4, 6)),
      "a torch.seed() result used after a later manual_seed: values as eager (that trace breaks)")


def seed_then_fail(t):
    torch.manual_seed(21)
    r = torch.rand(4, 6)
    return t @ t + r  # (4, 6) @ (4, 6): raises after the draw


def check_seed_then_fail():
    tracejit.reset()
    torch.manual_seed(0)
    try:
        seed_then_fail(x)
    except RuntimeError as e:
        want = (str(e), torch.rand(3))
    torch.manual_seed(1)
    try:
        tracejit.compile(seed_then_fail, backend=BACKEND)(x)
        got = None
    except RuntimeError as e:
        got = (str(e), torch.rand(3))
    check(got is not None and got[0] == want[0] and torch.equal(got[1], want[1]),
          "a graph failing after the seed raises eager's error, with the generator where eager leaves it")


check_seed_then_fail()


def fail_before_seed(t, idx):
    y = t[idx]  # raises for an index out of range, before the seed in eager
    torch.manual_seed(3)
    return y * 2


def check_fail_before_seed():
    tracejit.reset()
    compiled = tracejit.compile(fail_before_seed, backend=BACKEND)
    compiled(x, torch.tensor([1]))
    draws = []
    for fn in (fail_before_seed, compiled):
        torch.manual_seed(100)
        try:
            fn(x, torch.tensor([7]))
        except IndexError:
            pass
        draws.append(torch.rand(3))
    check(torch.equal(draws[0], draws[1]), "a graph failing before its seed leaves the generator where eager does")


check_fail_before_seed()
effects = []


def seed_out_of_range(t):
    effects.append(1)
    try:
        torch.manual_seed(2 ** 64)
    except RuntimeError:
        effects.append("caught")
    return t + 1


def check_seed_out_of_range():
    tracejit.reset()
    got = tracejit.compile(seed_out_of_range, backend=BACKEND)(x)
    check(torch.equal(got, x + 1) and effects == [1, "caught"],
          f"a seed beyond 64 bits raises inside the user's try, as in eager (effects {effects})")


check_seed_out_of_range()
finish()
