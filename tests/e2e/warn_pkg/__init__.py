"""A library module that warns, as torch's functional code does: its
functions are inlined into the compiled caller (capture_warnings.py)."""
import warnings

import torch


def scaled(x):
    warnings.warn("scaled() is deprecated")  # stacklevel 1: this line
    return x * 2


def caller_named(x):
    warnings.warn("the caller is named", DeprecationWarning, stacklevel=2)  # the caller's line
    return x + 1


def caller_of_caller(x):
    warnings.warn("two frames up", FutureWarning, stacklevel=3)
    return x - 1


def via(x):
    return caller_of_caller(x)
