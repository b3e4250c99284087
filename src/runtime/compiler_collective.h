// The compiler collective (issue 17; TorchDynamo's run_compiler_collective).
//
// When a model trains on several processes, each rank traces its frames on
// its own. A decision that differs between ranks (a dim dynamic on one rank
// only, a graph break on one rank only) makes their graphs, and the Python
// code run between them, differ. At the first compile of each code object
// whose trace does tensor work, every rank therefore gathers every rank's
// local state with torch.distributed.all_gather_object, and all of them
// take the same decisions:
// - a tensor input's dim is dynamic when its size differs between ranks
//   (under dynamic=None; dynamic=False keeps each rank's own sizes);
// - the frame breaks at the first instruction where any rank broke, for
//   that rank's reason (a rank that traced through is made to break there);
// - the frame runs uncompiled on every rank when any rank's trace gave up.
// It runs once per code object, in the order the ranks first compile
// frames: like any collective, it needs every rank to compile the same
// frames in the same order (the same program on each rank).
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
  std::map<std::string, std::vector<int64_t>> sizes;  // tensor input source -> its sizes
  int break_at = -1;                                  // the failing instruction of its break; -1: none
  std::string break_reason;
  std::string unchanged_reason;                       // set: its trace gave up on the frame
};

// What every rank does.
struct CollectiveDecision {
  std::map<std::string, std::vector<bool>> dynamic;  // dims whose size differs between ranks
  int break_at = -1;
  int break_rank = -1;
  std::string break_reason;
  int unchanged_rank = -1;  // >= 0: the frame runs uncompiled (that rank gave up)
  std::string unchanged_reason;
};

// The decision from every rank's state (index = rank). Pure.
CollectiveDecision merge_collective_states(const std::vector<CollectiveState>& states);

// Whether first compiles run the collective: tracejit.config.compiler_collectives
// (-1, None: when torch.distributed is initialized with a world size > 1;
// 1: whenever it is initialized; 0: never).
bool compiler_collectives_on(int setting);

// Gathers `local` from every rank of the default process group: the merged
// decision, or nullopt with a Python error set.
std::optional<CollectiveDecision> run_compiler_collective(const CollectiveState& local);

}  // namespace tj::runtime
