// The warm-up thread: work every first compile of a process pays, whatever
// its graph, started on a thread of its own when `_tracejit` is imported, so
// that it overlaps the program's own start (building its model, loading its
// data) instead of lengthening the first compiled call (issue 44: a warm
// start's first call). Today: the LLVM JIT's set-up (target machine, host CPU
// features, LLJIT, libmvec) and the operator registry's index of ATen's
// overloads (every op name the dispatcher knows). Neither touches Python; a
// first compile that comes before the thread is done waits for the part it
// needs (each is a thread-safe once-only initialization). The thread is
// waited for before the process forks (pthread_atfork: a child must not
// inherit a half-made JIT or a held lock) and at interpreter exit (nothing
// is torn down under it). TRACEJIT_WARM_UP=0 turns it off.
#pragma once

namespace tj::runtime {

// Starts the thread (once per process; nothing when turned off).
void start_warm_up();

// Blocks until the thread is done (no-op when none runs).
void wait_for_warm_up();

}  // namespace tj::runtime
