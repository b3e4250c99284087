"""tracejit.same: the accuracy comparison of the debugging tools (the seed's
`same`, TorchDynamo's accuracy checker): nested lists/tuples/dicts and
scalars compared item by item; tensors by dtype (exact for bool and
integers), shape and values within `tol`. Given a float64 reference
`fp64_ref` (the same computation on the inputs cast to float64, nested like
`ref`), a float result outside `tol` still passes when it is about as
accurate as eager: its root-mean-square error against `fp64_ref` is at most
`multiplier` (default 2.0; 3.0 for float16/bfloat16 results) times eager's
own RMSE against it, plus tol / 10; when eager's error is NaN (eager cannot
compute it stably in its precision) it passes, as Dynamo's does. So a
kernel that rounds differently from eager, or more accurately, passes,
and one that is much less accurate fails."""
import math

import torch


def _rmse(a, b):
    return torch.sqrt(torch.mean(torch.square(a.double() - b.double()))).item()


def _multiplier(multiplier, dtype):
    if multiplier is not None:
        return multiplier
    return 3.0 if dtype in (torch.float16, torch.bfloat16) else 2.0


def _within_fp64(ref_error, res_error, multiplier, tol):
    """Eager's and the result's errors against float64: the rule above."""
    if math.isnan(ref_error):
        return True  # eager cannot produce it stably in this precision
    return math.isfinite(res_error) and res_error <= multiplier * ref_error + tol / 10


def _same_tensor(ref, res, fp64_ref, tol, cos_similarity, equal_nan, exact_dtype, multiplier):
    if not isinstance(res, torch.Tensor) or ref.shape != res.shape:
        return False
    if exact_dtype and ref.dtype != res.dtype:
        return False
    if ref.dtype == torch.bool or not (ref.is_floating_point() or ref.is_complex()):
        return bool(torch.equal(ref, res.to(ref.dtype)))
    res_dtype = res.dtype
    ref, res = ref.detach(), res.detach().to(ref.dtype)
    if ref.numel() == 0:
        return True
    nan_ref, nan_res = torch.isnan(ref), torch.isnan(res)
    if not torch.equal(nan_ref, nan_res):
        return False
    if isinstance(fp64_ref, torch.Tensor) and fp64_ref.shape == ref.shape:
        fp64_ref = fp64_ref.detach().double()
    else:
        fp64_ref = None
    if nan_ref.any():
        if not equal_nan:
            return False
        keep = ~nan_ref
        ref, res = ref[keep], res[keep]
        fp64_ref = fp64_ref[keep] if fp64_ref is not None else None
    if cos_similarity:
        a, b = ref.flatten().double(), res.flatten().double()
        denom = (a.norm() * b.norm()).item()
        return denom == 0 and a.norm().item() == b.norm().item() or (denom > 0 and (a @ b).item() / denom >= 0.99)
    if torch.allclose(ref, res, atol=tol, rtol=tol, equal_nan=True):
        return True
    if fp64_ref is not None:
        return _within_fp64(_rmse(fp64_ref, ref), _rmse(fp64_ref, res), _multiplier(multiplier, res_dtype), tol)
    return False


def same(ref, res, fp64_ref=None, *, tol=1e-4, cos_similarity=False, equal_nan=False, exact_dtype=True,
         multiplier=None):
    """True when `res` matches `ref` (see the module docstring); `fp64_ref`
    nests like `ref` (a part of it missing or of another shape: that part
    is compared within `tol` alone)."""
    def again(a, b, f):
        return same(a, b, f, tol=tol, cos_similarity=cos_similarity, equal_nan=equal_nan, exact_dtype=exact_dtype,
                    multiplier=multiplier)

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
        return _same_tensor(ref, res, fp64_ref, tol, cos_similarity, equal_nan, exact_dtype, multiplier)
    if isinstance(ref, float):
        if not isinstance(res, (int, float)) or isinstance(res, bool):
            return False
        if math.isnan(ref) or math.isnan(res):
            return equal_nan and math.isnan(ref) and math.isnan(res)
        if math.isclose(ref, res, rel_tol=tol, abs_tol=tol):
            return True
        if isinstance(fp64_ref, (int, float)) and not isinstance(fp64_ref, bool):
            return _within_fp64(abs(fp64_ref - ref), abs(fp64_ref - res), _multiplier(multiplier, None), tol)
        return False
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
