"""tracejit.same: the accuracy comparison of the debugging tools (the seed's
`same`): nested lists/tuples/dicts and scalars compared item by item;
tensors by dtype (exact for bool and integers), shape and values within
`tol`, or, given a float64 reference `fp64_ref` computed from the same
inputs, by root-mean-square error: the compiled result may be at most
twice the eager result's own error against float64 (so a
kernel that is as accurate as eager passes although it differs bitwise)."""
import math

import torch


def _rmse(a, b):
    return torch.sqrt(torch.mean(torch.square(a.double() - b.double()))).item()


def _same_tensor(ref, res, fp64_ref, tol, cos_similarity, equal_nan, exact_dtype):
    if not isinstance(res, torch.Tensor) or ref.shape != res.shape:
        return False
    if exact_dtype and ref.dtype != res.dtype:
        return False
    if ref.dtype == torch.bool or not (ref.is_floating_point() or ref.is_complex()):
        return bool(torch.equal(ref, res.to(ref.dtype)))
    ref, res = ref.detach(), res.detach().to(ref.dtype)
    if ref.numel() == 0:
        return True
    nan_ref, nan_res = torch.isnan(ref), torch.isnan(res)
    if not torch.equal(nan_ref, nan_res):
        return False
    if nan_ref.any():
        if not equal_nan:
            return False
        keep = ~nan_ref
        ref, res = ref[keep], res[keep]
        fp64_ref = fp64_ref[keep] if isinstance(fp64_ref, torch.Tensor) else fp64_ref
    if cos_similarity:
        a, b = ref.flatten().double(), res.flatten().double()
        denom = (a.norm() * b.norm()).item()
        return denom == 0 and a.norm().item() == b.norm().item() or (denom > 0 and (a @ b).item() / denom >= 0.99)
    if torch.allclose(ref, res, atol=tol, rtol=tol, equal_nan=True):
        return True
    if isinstance(fp64_ref, torch.Tensor) and fp64_ref.shape == ref.shape:
        # As accurate as eager against float64, with slack for rounding.
        ref_error = _rmse(fp64_ref, ref)
        res_error = _rmse(fp64_ref, res)
        return res_error <= 2.0 * ref_error + tol / 10 and math.isfinite(res_error)
    return False


def same(ref, res, fp64_ref=None, *, tol=1e-4, cos_similarity=False, equal_nan=False, exact_dtype=True):
    """True when `res` matches `ref` (see the module docstring)."""
    def again(a, b, f):
        return same(a, b, f, tol=tol, cos_similarity=cos_similarity, equal_nan=equal_nan, exact_dtype=exact_dtype)

    if isinstance(ref, (list, tuple)):
        if not isinstance(res, (list, tuple)) or len(ref) != len(res):
            return False
        refs64 = fp64_ref if isinstance(fp64_ref, (list, tuple)) and len(fp64_ref) == len(ref) else [None] * len(ref)
        return all(again(a, b, f) for a, b, f in zip(ref, res, refs64))
    if isinstance(ref, dict):
        if not isinstance(res, dict) or set(ref) != set(res):
            return False
        refs64 = fp64_ref if isinstance(fp64_ref, dict) else {}
        return all(again(ref[k], res[k], refs64.get(k)) for k in ref)
    if isinstance(ref, torch.Tensor):
        return _same_tensor(ref, res, fp64_ref, tol, cos_similarity, equal_nan, exact_dtype)
    if isinstance(ref, float):
        if not isinstance(res, (int, float)):
            return False
        if math.isnan(ref):
            return equal_nan and math.isnan(res)
        return math.isclose(ref, res, rel_tol=tol, abs_tol=tol)
    return type(ref) is type(res) and ref == res


def reduce_to_scalar_loss(out):
    """One scalar from any output structure (the seeds' reduce_to_scalar_loss):
    the mean of every floating tensor, summed, so backward reaches them all."""
    import torch

    if isinstance(out, torch.Tensor):
        return out.sum() / max(out.numel(), 1) if out.is_floating_point() else out.new_zeros(())
    if isinstance(out, (list, tuple)):
        return sum((reduce_to_scalar_loss(o) for o in out), torch.zeros(()))
    if isinstance(out, dict):
        return sum((reduce_to_scalar_loss(o) for o in out.values()), torch.zeros(()))
    return torch.zeros(())


def _requires_grad(out):
    if isinstance(out, (list, tuple)):
        return any(_requires_grad(o) for o in out)
    if isinstance(out, dict):
        return any(_requires_grad(o) for o in out.values())
    return getattr(out, "requires_grad", False)


def run_fwd_maybe_bwd(fn, args):
    """`fn(*args)`, and when the result requires grad, backward through
    reduce_to_scalar_loss: (outputs, gradients of the inputs that require
    grad). `args` are used as given (pass clones)."""
    out = fn(*args)
    grads = []
    if _requires_grad(out):
        reduce_to_scalar_loss(out).backward()
        grads = [a.grad for a in args if getattr(a, "requires_grad", False)]
    return out, grads


def same_two_models(ref_fn, res_fn, args, fp64_fn=None, fp64_args=None, *, tol=1e-4):
    """Runs both on their own copies of `args`, forward and (when outputs
    require grad) backward, and compares outputs and input gradients with
    `same` (an fp64 run of `fp64_fn` on `fp64_args`, when given, is the
    reference for rounding). Returns None when they agree, else what differs."""
    def copies(xs):
        return [a.detach().clone().requires_grad_(a.requires_grad) if hasattr(a, "detach") else a for a in xs]

    ref_out, ref_grads = run_fwd_maybe_bwd(ref_fn, copies(args))
    res_out, res_grads = run_fwd_maybe_bwd(res_fn, copies(args))
    fp64_out = fp64_grads = None
    if fp64_fn is not None:
        try:
            fp64_out, fp64_grads = run_fwd_maybe_bwd(fp64_fn, copies(fp64_args))
        except Exception:  # noqa: BLE001 - no fp64 reference: compare with tol alone
            pass
    if not same(ref_out, res_out, fp64_out, tol=tol, equal_nan=True):
        return "outputs"
    if not same(ref_grads, res_grads, fp64_grads, tol=tol, equal_nan=True):
        return "gradients"
    return None
