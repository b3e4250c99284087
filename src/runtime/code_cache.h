// The per-code-object cache, kept in the code object's co_extra slot.
//
// Layout: co_extra -> CodeState, owned by the code object (freed by CPython
// through free_code_state when the code object dies). A CodeState says what
// to do with frames of that code:
//   - Mode::unknown   not decided yet (or decided before the last reset());
//   - Mode::skip      run unchanged (skip file, disabled, no tensor work,
//                     cache limit hit); cleared by reset() via the epoch;
//   - Mode::never     always run unchanged, across resets: tracejit's own
//                     transformed code and tracejit.disable-d functions;
//   - Mode::compile   look the frame up in `entries`, first hit wins.
// An entry holds the transformed code object to run and the guards that
// must hold for it. reset() bumps a global epoch: states from an older epoch
// read as empty, so no registry of code objects is needed.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "runtime/eval_frame.h"
#include "support/py_ref.h"

namespace tj::runtime {

// Guards of one cache entry, evaluated on the frame's locals and globals.
// The tracer provides the implementation; nullptr means "always holds".
class GuardCheck {
 public:
  virtual ~GuardCheck() = default;
  // True when every guard holds. On failure, `failed` (when non-null) gets
  // a readable description of the first failing guard. A guard whose read
  // or comparison raises does not hold, and the error is dropped (the
  // retrace meets it again), except an interruption (KeyboardInterrupt,
  // MemoryError: support/py_errors.h), which is left set: the caller
  // returns it to the eval loop.
  virtual bool check(const tj_FrameView& frame, std::string* failed) const = 0;
  // A guard that cannot hold on a later call (an identity check on an
  // object made afresh by every read, such as a bound method), described;
  // "" when there is none. For the debug check config.debug_check_guards.
  virtual std::string unstable_guard(const tj_FrameView&) const { return ""; }
  // Automatic dynamic shapes: when every guard holds but for the sizes of
  // some tensors (same rank, dtype, device, ... and dense) and, when `ints`
  // is given, the values of some ints (CONST_EQ of an int that is still an
  // int in the range of dynamic ints), adds per source text the dims whose
  // size differs to `dims`, those ints' sources to `ints`, and returns true.
  virtual bool fails_only_on_sizes(const tj_FrameView&, std::unordered_map<std::string, std::vector<bool>>* dims,
                                   std::vector<std::string>* ints = nullptr) const {
    (void)dims;
    (void)ints;
    return false;
  }
  // Automatic dynamic numbers, whatever else fails: the sources of CONST_EQ
  // guards on ints and floats whose value changed but is still such a
  // number (as TorchDynamo compares with the last compile's values: a
  // training step's first recompile, for `.grad` set, also sees the LR
  // scheduler's numbers move).
  virtual void changed_numbers(const tj_FrameView&, std::vector<std::string>& sources) const { (void)sources; }
};

struct CompileOptions;

// Automatic dynamic ints (dynamic=None/True): sources of ints that changed
// value between calls, traced as graph inputs; `static_ints`, those whose
// trace as an input went less far than with the value as a constant (a
// branch or a shape needed the value): they stay constants.
struct DynamicInts {
  std::unordered_set<std::string> dynamic, static_ints;
};

// An entry is used only under options that compile the same way (same
// backend, fullgraph, dynamic); it keeps them alive.
struct CacheEntry {
  PyRef code;  // the transformed code
  std::unique_ptr<GuardCheck> guards;
  std::shared_ptr<const CompileOptions> options;
};

enum class CodeMode { unknown, skip, never, compile };

struct CodeState {
  CodeMode mode = CodeMode::unknown;
  uint64_t epoch = 0;
  std::string skip_reason;
  bool skip_is_unsupported = false;  // skipped because tracing failed (fullgraph retraces to raise)
  int8_t file_skipped[2] = {-1, -1};  // is_skipped_code's answer per mode (explicit, whole program); -1: not asked
  std::vector<CacheEntry> entries;
  bool warned_cache_limit = false;
  // dynamic=None: per input source text, the dims whose size changed on a
  // guard failure that nothing else explained; the next trace makes them dynamic.
  std::unordered_map<std::string, std::vector<bool>> automatic_dynamic;
  // ... and the ints whose value changed so (traced as graph inputs next
  // time), less those a trace showed are better constants (`static_ints`).
  DynamicInts dynamic_ints;
  // A resume function made by a compile that ran the compiler collective,
  // for a break every rank takes: its first compile runs it too.
  bool collective_resume = false;

  ~CodeState();
  void clear();
};

// Sets in `automatic[source]` the dims set in `dims` (dynamic=None: the
// dims the next trace makes dynamic); returns those that were not set yet.
std::vector<size_t> add_automatic_dims(std::unordered_map<std::string, std::vector<bool>>& automatic,
                                       const std::string& source, const std::vector<bool>& dims);

// The current epoch (bumped by reset()).
uint64_t cache_epoch();
void bump_cache_epoch();

// Returns the code's state, creating it (and storing it in co_extra) when
// missing; a state from an older epoch is cleared first. Never null unless
// Python is out of memory (then a Python error is set).
CodeState* code_state(PyCodeObject* code, void* extra);
// Same, for a code object we only hold (no frame at hand).
CodeState* code_state(PyCodeObject* code);

// Marks a code object we generated so that its frames always run unchanged.
void mark_never_traced(PyCodeObject* code);

// The destructor CPython calls for our co_extra slot.
extern "C" void free_code_state(void* state);

}  // namespace tj::runtime
