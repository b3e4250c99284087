"""Graph breaks interleaved with side effects, inlined calls that break,
errors raised by tensor code and caught by the program: identical
transcripts under python3.11 and `tracejit --compile-all`."""
import torch

torch.manual_seed(3)
EVENTS = []
STATE = {"calls": 0, "last": None}


def note(tag, value):
    EVENTS.append((tag, round(float(value), 4)))


def helper_that_breaks(x, scale):
    y = x * scale
    print("helper sees", tuple(y.shape))
    STATE["calls"] += 1
    return y + STATE["calls"]


def effects_around_breaks(x):
    acc = []
    acc.append(x.sum())
    STATE["last"] = "before"
    z = helper_that_breaks(x, 2.0)
    acc.append(z.sum())
    note("mid", z.mean())
    STATE["last"] = "after"
    if z.sum() > 0:
        acc.append(z.max())
    return torch.stack(acc), len(acc)


def errors_caught(x, bad_shape):
    try:
        y = x @ torch.ones(bad_shape)
        return "ok", y.shape
    except RuntimeError:
        return "caught", x.shape


def early_exit(xs):
    for i, x in enumerate(xs):
        if i == 2:
            return i, x * 3
        xs[i] = x + 1
    return -1, None


def nested_comprehensions(x):
    k = 2
    grid = [[(x * i + j * k).sum() for j in range(3)] for i in range(2)]
    flat = {f"{i}{j}": v for i, row in enumerate(grid) for j, v in enumerate(row)}
    return sorted(flat), torch.stack([v for row in grid for v in row])


def partial_generator(x):
    def numbers():
        for i in range(100):
            yield x * i

    g = numbers()
    first = next(g)
    second = next(g)
    return first + second


def main():
    x = torch.randn(3)
    for i in range(2):
        r, n = effects_around_breaks(x + i)
        print("effects", [round(v, 4) for v in r.tolist()], n, STATE, EVENTS[-1])
    print("errors", errors_caught(torch.ones(2, 3), (3, 2)), errors_caught(torch.ones(2, 3), (4, 2)))
    xs = [torch.ones(2) * i for i in range(4)]
    i, v = early_exit(xs)
    print("early_exit", i, v.tolist(), [t.tolist() for t in xs])
    keys, values = nested_comprehensions(torch.ones(2))
    print("comprehensions", keys, values.tolist())
    print("partial_generator", partial_generator(torch.ones(2)).tolist())


main()
