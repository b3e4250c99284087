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
import warnings

import torch
from torch.optim import lr_scheduler as _lr_scheduler


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


def lr_scheduler_step(self, epoch=None):
    """torch.optim.lr_scheduler._LRScheduler.step (PyTorch 1.13), without the
    class it defines at each call (`_enable_get_lr_call`, a context manager
    that sets `_get_lr_called_within_step` around get_lr): the flag is set
    and cleared around the same calls. (Should get_lr raise, the trace
    breaks and the original runs.)"""
    if self._step_count == 1:
        if not hasattr(self.optimizer.step, "_with_counter"):
            warnings.warn("Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                          "initialization. Please, make sure to call `optimizer.step()` before "
                          "`lr_scheduler.step()`. See more details at "
                          "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate", UserWarning)
        elif self.optimizer._step_count < 1:
            warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
                          "In PyTorch 1.1.0 and later, you should call them in the opposite order: "
                          "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
                          "will result in PyTorch skipping the first value of the learning rate schedule. "
                          "See more details at "
                          "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate", UserWarning)
    self._step_count += 1

    self._get_lr_called_within_step = True
    if epoch is None:
        self.last_epoch += 1
        values = self.get_lr()
    else:
        warnings.warn(_lr_scheduler.EPOCH_DEPRECATION_WARNING, UserWarning)
        self.last_epoch = epoch
        if hasattr(self, "_get_closed_form_lr"):
            values = self._get_closed_form_lr()
        else:
            values = self.get_lr()
    self._get_lr_called_within_step = False

    for i, data in enumerate(zip(self.optimizer.param_groups, values)):
        param_group, lr = data
        param_group['lr'] = lr
        self.print_lr(self.verbose, i, lr, epoch)

    self._last_lr = [group['lr'] for group in self.optimizer.param_groups]


def object_init():
    """object.__init__ reached by a zero-argument `super().__init__()` in a
    class whose base is object (tracer/translate_getattr.cpp): nothing to do.
    Called with arguments it does not bind, so the trace breaks there and
    CPython raises as it would."""
    return None


def replacements():
    """{original function: its polyfill}, read once by the tracer."""
    # torch.optim deletes its submodules' names from its namespace: by module path.
    radam = importlib.import_module("torch.optim.radam")
    asgd = importlib.import_module("torch.optim.asgd")
    return {
        radam._single_tensor_radam: radam_single_tensor,
        asgd._single_tensor_asgd: asgd_single_tensor,
        _lr_scheduler._LRScheduler.step: lr_scheduler_step,
    }
