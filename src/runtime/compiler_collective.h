// The compiler collective (issue 17; TorchDynamo's run_compiler_collective).
//
// When a model trains on several processes, each rank traces its frames on
// its own. A decision that differs between ranks (a dim dynamic on one rank
// only, a graph break on one rank only) makes their graphs, and the Python
// code run between them, differ. At the first compile of each code object
// whose trace does tensor work, every rank therefore gathers every rank's
// local state with torch.distributed.all_gather_object, and all of them
// take the same decisions:
// - a tensor input's dim is dynamic when its size differs between ranks or
//   any rank's trace made it dynamic (mark_dynamic, an earlier size change)
//   (under dynamic=None; dynamic=False keeps each rank's own sizes);
// - the frame breaks at the first instruction where any rank broke, for
//   that rank's reason (a rank that traced through is made to break there);
// - the frame runs uncompiled on every rank when any rank's trace gave up;
// - duck sizing (equal input sizes share a symbol) shares only sizes equal
//   on every rank (a rank whose sizes happen to coincide would otherwise
//   trace another graph than the others).
// A second gather then compares the traces the ranks ended with (a rank
// may not reach the instruction another broke at, on a branch it does not
// take): when they differ, every rank runs the frame uncompiled.
// It runs once per code object, in the order the ranks first compile
// frames, and for the resume function of a break it aligned (one that
// every rank continues into); not for recompiles nor the resume functions
// they make. Like any collective it needs every rank to compile the same
// frames in the same order; when the gathered states name different
// frames, every rank runs that frame uncompiled and stops running the
// collective for the rest of the process, with a warning.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tj::runtime {

// One rank's state, as gathered.
struct CollectiveState {
  std::string code;                                   // which frame: file, first line, name
  std::map<std::string, std::vector<int64_t>> sizes;  // tensor input source -> its sizes
  std::map<std::string, std::vector<bool>> dynamic;   // the dims its trace made dynamic (mark_dynamic, ...)
  int break_at = -1;                                  // the failing instruction of its break; -1: none
  std::string break_reason;
  std::string unchanged_reason;                       // set: its trace gave up on the frame
};

// What every rank does.
struct CollectiveDecision {
  std::map<std::string, std::vector<bool>> dynamic;  // dims whose size differs between ranks, or dynamic on one
  int break_at = -1;
  int break_rank = -1;
  std::string break_reason;
  int unchanged_rank = -1;  // >= 0: the frame runs uncompiled (that rank gave up)
  std::string unchanged_reason;
  std::string mismatch;  // set: the ranks named different frames (what they named)
};

// The decision from every rank's state (index = rank). Pure.
CollectiveDecision merge_collective_states(const std::vector<CollectiveState>& states);

// The second gather's answer: "" when every rank ended with the same trace
// outcome (the same frame, break instruction, giving up or not), else what
// differs. Pure.
std::string compare_trace_outcomes(const std::vector<CollectiveState>& outcomes);

// Whether first compiles run the collective: tracejit.config.compiler_collectives
// (-1, None: when torch.distributed is initialized with a world size > 1;
// 1: whenever it is initialized; 0: never), and no mismatch stopped it.
bool compiler_collectives_on(int setting);
// After a mismatch: no more collectives in this process.
void stop_compiler_collectives();

// Every rank's `local` (index = rank), gathered over the default process
// group; nullopt with a Python error set when that failed.
std::optional<std::vector<CollectiveState>> gather_collective_states(const CollectiveState& local);

}  // namespace tj::runtime
