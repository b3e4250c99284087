"""How scripts/bench times things: contenders of one workload are run
round-robin in one process, and each one's time is the median of its
samples.

Why each rule exists (every one was a measured problem before):
- Round-robin, with the starting contender rotated each round: drift
  (another process on the machine, CPU frequency, the heap growing) then
  hits every contender alike instead of whichever ran last.
- A sample is as many calls as last >= `min_sample_s`, so timer resolution
  and per-sample noise stay small even for a 10 us call; the median of
  >= `min_samples` samples ignores the odd sample a neighbour disturbed,
  and more rounds run (up to 3x, 2x with --quick) while a paired ratio's median is not yet
  known within 2%.
- glibc's malloc is told to keep freed memory (`steady_malloc`). With its
  defaults, a 16 MiB tensor is first mmap'ed, then the mmap threshold
  rises and it comes from the heap, whose top is trimmed back to the
  kernel whenever more than twice that threshold is free. Whether a call
  page-faults 80 MiB of fresh memory or reuses warm pages then depends on
  what the previous contender left at the top of the heap: eager PyTorch
  measured 3x slower than tracejit's `eager` backend on pointwise8 (the
  same ATen calls) while it took ~20,000 minor faults per call and the
  other none. With trimming and mmap off, every contender reuses warm
  memory after its warm-up: the bench compares the work done, and the
  page faults per call it still reports show it.
"""
import ctypes
import gc
import resource
import statistics
import time

# mallopt parameter numbers (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4


def steady_malloc():
    """Keeps glibc from trimming the heap or mmap'ing big blocks; returns
    a line saying what was done (or why not)."""
    try:
        libc = ctypes.CDLL(None)
        ok = libc.mallopt(_M_TRIM_THRESHOLD, 1 << 30) == 1 and libc.mallopt(_M_MMAP_MAX, 0) == 1
    except (OSError, AttributeError) as e:
        return f"glibc malloc left as is ({e})"
    if not ok:
        return "glibc malloc left as is (mallopt refused)"
    return "glibc malloc: no heap trimming, no mmap (freed memory is reused warm)"


def minor_faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


class Settings:
    """Sample length and count: full or --quick."""

    def __init__(self, quick, wall=False):
        self.clock = time.perf_counter if wall else time.process_time
        self.clock_name = "wall-clock time" if wall else "process CPU time"
        self.min_sample_s = 0.010 if quick else 0.020
        self.min_samples = 9 if quick else 15
        self.max_samples = (2 if quick else 3) * self.min_samples
        self.target_error = 0.02
        self.warmup_s = 0.02 if quick else 0.1


class Contender:
    """One way of running a workload: `run(n)` makes n calls."""

    def __init__(self, name, run, twin_of=None):
        self.name = name
        self.run = run
        self.twin_of = twin_of  # the name of the identical contender it must agree with
        self.number = 1         # calls per sample
        self.samples = []       # seconds per call, one per sample
        self.faults = 0
        self.calls = 0

    def median(self):
        return statistics.median(self.samples)

    def spread(self):
        """The interquartile range over the median: how noisy the samples were."""
        if len(self.samples) < 4:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.samples, n=4)
        return (q3 - q1) / self.median()

    def faults_per_call(self):
        return self.faults / self.calls if self.calls else 0.0

    def timed(self, n, clock):
        f0 = minor_faults()
        t0 = clock()
        self.run(n)
        dt = clock() - t0
        return dt, minor_faults() - f0


def _calibrate(c, settings):
    """Warms c up and picks its calls per sample."""
    spent = 0.0
    n = 1
    while True:
        dt, _ = c.timed(n, settings.clock)
        spent += dt
        if dt >= settings.min_sample_s / 4 or n >= 1 << 20:
            break
        n *= 4
    per_call = max(dt / n, 1e-9)
    c.number = max(1, round(settings.min_sample_s / per_call + 0.5))
    while spent < settings.warmup_s:
        dt, _ = c.timed(c.number, settings.clock)
        spent += dt


def _median_error(ratios):
    """Approximate relative standard error of the median of paired ratios
    (0.93 * IQR / sqrt(n), the normal approximation)."""
    if len(ratios) < 4:
        return float("inf")
    q1, med, q3 = statistics.quantiles(ratios, n=4)
    return 0.93 * (q3 - q1) / med / len(ratios) ** 0.5


def _precise_enough(contenders, target):
    """Every contender's ratio to the first, and every twin's to its
    original, known to within `target`."""
    by_name = {c.name: c for c in contenders}
    pairs = [(contenders[0], c) for c in contenders[1:]]
    pairs += [(by_name[c.twin_of], c) for c in contenders if c.twin_of in by_name]
    return all(_median_error([x / y for x, y in zip(a.samples, b.samples)]) <= target for a, b in pairs)


def measure(contenders, settings):
    """Times every contender, interleaved; fills their samples. Rounds go
    on past `min_samples` (up to `max_samples`) while a paired ratio is
    still too noisy to be known within `target_error`."""
    gc_was_on = gc.isenabled()
    gc.collect()
    gc.disable()  # as timeit: a collection lands in one sample, not in the call's cost
    try:
        for c in contenders:
            _calibrate(c, settings)
        for c in contenders:  # one discarded round, all at their sample size
            c.timed(c.number, settings.clock)
        k = len(contenders)
        r = 0
        while r < settings.min_samples or (
                r < settings.max_samples and not _precise_enough(contenders, settings.target_error)):
            for i in range(k):
                c = contenders[(r + i) % k]
                dt, faults = c.timed(c.number, settings.clock)
                c.samples.append(dt / c.number)
                c.faults += faults
                c.calls += c.number
            r += 1
    finally:
        if gc_was_on:
            gc.enable()
    return contenders


def paired_ratio(a, b):
    """How many times faster b ran than a: the median over rounds of
    a's sample / b's sample."""
    return statistics.median(x / y for x, y in zip(a.samples, b.samples))


def deviation(a, b):
    """Relative difference of two identical contenders, paired by round."""
    r = paired_ratio(a, b)
    return max(r, 1 / r) - 1
