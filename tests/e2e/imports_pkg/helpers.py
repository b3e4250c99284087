def double(t):
    return t * 2
