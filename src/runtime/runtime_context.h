// The runtime's state between calls, in one object rather than one global
// per file: the options mirrored from tracejit.config, the --compile-all
// options, the exception types of the `_tracejit` module, the test frame
// callback, explain's record, and what the last AOT compile and the last
// backend failure left for the tools.
//
// There is one per process (the frame hook and the embedded interpreter are
// per process). It is never destroyed: it holds Python references, which
// must not be released after the interpreter is finalized. Everything in it
// is used with the GIL held, except `last_failure`, which a compiled
// function may set from any thread (`failure_mutex`).
//
// Not here: the per-code cache's epoch (code_cache.cpp) and the compiler
// collective's switch (compiler_collective.cpp), which their unit tests
// build without the rest of the runtime; the frame hook's own C state
// (eval_frame.c); per-thread timing (compiled_graph.cpp).
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <memory>
#include <mutex>
#include <optional>
#include <unordered_set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "runtime/backend_step.h"
#include "runtime/runtime_state.h"
#include "support/py_ref.h"
#include "tracer/trace_api.h"

namespace tj::runtime {

// What explain mode (tracejit.explain) records between explain_begin and
// explain_end: every graph and every reason a frame ran uncompiled.
// `skipped`: frames that ran uncompiled without a trace (the skip policy
// for torch code the tracer would inline, cache_size_limit), once per code.
struct ExplainRecord {
  std::vector<std::shared_ptr<const graph::Graph>> graphs;
  std::vector<tracer::Unsupported> reasons;
  std::vector<tracer::Unsupported> specializations;  // sizes guarded by value, and why
  std::vector<tracer::Unsupported> skipped;
  std::unordered_set<const void*> skipped_codes;
  int op_count = 0;
};

struct RuntimeContext {
  RuntimeConfig config;                                // mirrored from tracejit.config
  std::shared_ptr<CompileOptions> compile_all_options;  // --compile-all, or null
  PyRef unsupported_error;                             // tracejit.Unsupported
  PyRef backend_compiler_failed_error;                 // tracejit.BackendCompilerFailed
  PyRef tracejit_warning;                              // tracejit.TracejitWarning (user_warnings.h)
  PyRef python_frame_callback;                         // set_python_frame_callback, or null
  std::unique_ptr<ExplainRecord> explain;              // null unless explain mode is on
  std::string last_aot_summary;                        // last_aot_summary()
  std::mutex failure_mutex;
  std::optional<BackendFailure> last_failure;  // take_last_backend_failure()
  // The <n> of the next resume function's "__resume_at_<offset>_<n>"
  // (tracer::make_break_code): unique in the process. Compiles hold the GIL.
  int next_resume_number = 0;
};

// The process's runtime context.
RuntimeContext& runtime_context();

}  // namespace tj::runtime
