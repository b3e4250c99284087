import copy, sys, traceback
import torch
import tracejit

def summarize(ex):
    rs = [f"{r.reason[:150]} @{r.filename.split('/')[-1]}:{r.lineno}" for r in ex.break_reasons]
    sk = [f"SKIP {r.reason[:150]} @{r.filename.split('/')[-1]}:{r.lineno}" for r in getattr(ex, 'skipped_frames', [])]
    return ex.graph_count, ex.graph_break_count, rs + sk

def report(name, kind, ex, tail):
    g, b, rs = summarize(ex)
    print(f"RESULT {name} {kind} graphs={g} breaks={b} {tail}")
    for r in rs: print(f"  REASON {name} {kind}: {r}")

def report_error(name, kind, e):
    print(f"RESULT {name} {kind} ERROR {type(e).__name__}: {str(e)[:300]}")
    traceback.print_exc()

def clone(model):
    try:
        return copy.deepcopy(model)
    except RuntimeError:
        m = type(model)(); m.load_state_dict(model.state_dict()); m.train(model.training); return m

def run(name, model, infer_args, loss_fn, opt_ctor=lambda p: torch.optim.AdamW(p, lr=1e-3)):
    torch.manual_seed(0)
    model.eval()
    try:
        with torch.no_grad():
            want = model(*infer_args)
        tracejit.reset()
        with torch.no_grad():
            ex = tracejit.explain(model)(*infer_args)
            got = tracejit.compile(model)(*infer_args)
        ok = all(torch.allclose(a, b, atol=1e-4) for a, b in zip(torch.utils._pytree.tree_flatten(got)[0], torch.utils._pytree.tree_flatten(want)[0]) if isinstance(a, torch.Tensor))
        report(name, "infer", ex, f"match={ok}")
    except Exception as e:
        report_error(name, "infer", e)
    model.train()
    m2 = clone(model)
    opt = opt_ctor(model.parameters())
    def step(model, opt, *batch):
        loss = loss_fn(model, *batch)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.detach()
    try:
        tracejit.reset()
        ex = tracejit.explain(step)(model, opt, *infer_args)
        g, b, rs = summarize(ex)
        opt2 = opt_ctor(m2.parameters())
        torch.manual_seed(1); l1 = [step(m2, opt2, *infer_args) for _ in range(2)]
        m3 = clone(m2); opt3 = opt_ctor(m3.parameters()); opt3.load_state_dict(opt2.state_dict())
        c = tracejit.compile(step)
        torch.manual_seed(2); a = [step(m2, opt2, *infer_args) for _ in range(2)]
        torch.manual_seed(2); bb = [c(m3, opt3, *infer_args) for _ in range(2)]
        ok = all(torch.allclose(x, y, atol=1e-4) for x, y in zip(a, bb))
        print(f"RESULT {name} train graphs={g} breaks={b} match={ok}")
        for r in rs: print(f"  REASON {name} train: {r}")
    except Exception as e:
        print(f"RESULT {name} train ERROR {type(e).__name__}: {str(e)[:300]}")
        traceback.print_exc()


def run_loop(name, make_state, step, batches, kind="train"):
    """A whole training/acting loop body as public scripts write it: `step(state, batch)`
    called once per batch, eager on one copy of the state and compiled on another,
    with Python's and numpy's and torch's random streams reseeded alike. Prints graphs/breaks
    (explain on a third copy), whether every returned value matched eager, and the
    recompiles over the loop (`recompiles=`)."""
    import random
    import numpy as np

    def seeded(fn, state):
        random.seed(5); np.random.seed(5); torch.manual_seed(5)
        return [fn(state, b) for b in batches]
    try:
        want = seeded(step, make_state())
        tracejit.reset()
        random.seed(5); np.random.seed(5); torch.manual_seed(5)
        ex = tracejit.explain(step)(make_state(), batches[0])
        tracejit.reset()
        got = seeded(tracejit.compile(step), make_state())
        rec = tracejit.counters()["recompiles"]
        flat = lambda v: [x for x in torch.utils._pytree.tree_flatten(v)[0]]
        ok = all(type(a) is type(b) and (torch.allclose(a, b, atol=1e-4) if isinstance(a, torch.Tensor) else a == b or abs(a - b) < 1e-4)
                 for w, g in zip(want, got) for a, b in zip(flat(w), flat(g)))
        report(name, kind, ex, f"match={ok} recompiles={rec}")
    except Exception as e:
        report_error(name, kind, e)
