"""A helper module of capture_modules.py: a function that reads this
module's globals, handed back by a call (so the caller's trace reaches it
without a source)."""
SCALE = 3.0


def helper(t):
    return t * SCALE + OFFSET


OFFSET = 0.5


def get_helper():
    return helper
