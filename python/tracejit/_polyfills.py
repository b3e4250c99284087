"""Functions the tracer inlines in place of library functions it cannot
trace into one graph (tracer/translate_inline.cpp, `polyfill_for`).

Each computes what the function it replaces computes, bit for bit, in a
form the tracer keeps in the graph: where the original branches on a
number read from a tensor (`if rho_t > 5.`, `if mu.item() != 1`), both
sides are computed and `torch.where` picks one, so a value the untaken side
would have raised on in Python (math.sqrt of a negative number) is a NaN
that nothing reads. They run only while tracing (a graph break inside one
runs the original); tests/e2e/capture_optim.py compares the steps traced
through them with eager's, bit for bit.
"""
import importlib
import math

import torch


def radam_single_tensor(params, grads, exp_avgs, exp_avg_sqs, state_steps, *, beta1, beta2, lr, weight_decay, eps):
    """torch.optim.radam._single_tensor_radam (PyTorch 1.13)."""
    for i, param in enumerate(params):
        grad = grads[i]
        exp_avg = exp_avgs[i]
        exp_avg_sq = exp_avg_sqs[i]
        step_t = state_steps[i]
        step_t += 1
        step = step_t.item()

        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step

        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)

        exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)

        bias_corrected_exp_avg = exp_avg / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2

        # The original's `if rho_t > 5.:` with both sides computed.
        rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        adaptive_lr = math.sqrt(bias_correction2) / exp_avg_sq.sqrt().add_(eps)
        rectified = bias_corrected_exp_avg * lr * adaptive_lr * rect
        unrectified = bias_corrected_exp_avg * lr
        param.add_(torch.where(torch.tensor(rho_t > 5.), rectified, unrectified), alpha=-1.0)


def asgd_single_tensor(params, grads, axs, mus, etas, state_steps, *, lambd, lr, t0, alpha, weight_decay, maximize):
    """torch.optim.asgd._single_tensor_asgd (PyTorch 1.13), float32 and float64 parameters."""
    for i, param in enumerate(params):
        grad = grads[i]
        grad = grad if not maximize else -grad
        mu = mus[i]
        ax = axs[i]
        eta = etas[i]
        step_t = state_steps[i]
        if param.dtype not in (torch.float32, torch.float64):
            # complex parameters are viewed as real ones; float16/bfloat16
            # add_ read alpha in float where a 0-d tensor of theirs rounds it
            raise NotImplementedError("tracejit: the ASGD polyfill takes float32 and float64 parameters")

        step_t += 1
        step = step_t.item()

        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)

        param.mul_(torch.tensor(1 - lambd * eta.item(), dtype=param.dtype))
        # add_(grad, alpha=-eta.item()): the alpha cast to the parameter's
        # dtype, one rounding of param + alpha * grad, as addcmul's.
        param.addcmul_(grad, torch.tensor(-eta.item(), dtype=param.dtype))

        # The original's `if mu.item() != 1: ... else: ax.copy_(param)`.
        ax.copy_(torch.where(mu != 1, ax.add(param.sub(ax).mul(mu)), param))

        new_eta = torch.tensor(lr / ((1 + lambd * lr * step) ** alpha))
        eta.copy_(new_eta)
        # 1 / max(1, step - t0)
        since = step - t0
        new_mu = torch.where(torch.tensor(since > 1), torch.tensor(1 / since), torch.tensor(1.0))
        mu.copy_(new_mu)


def replacements():
    """{original function: its polyfill}, read once by the tracer."""
    # torch.optim deletes its submodules' names from its namespace: by module path.
    radam = importlib.import_module("torch.optim.radam")
    asgd = importlib.import_module("torch.optim.asgd")
    return {
        radam._single_tensor_radam: radam_single_tensor,
        asgd._single_tensor_asgd: asgd_single_tensor,
    }
