// Trace budgets: tracing must never cost much more than running the code.
//
// Instructions are counted over the frame and every call it inlines
// (TraceShared::traced_instructions). Unrolling stops at kMaxInstructions
// (the frame runs as it is, the reason is logged). A frame that has seen no
// tensor and read no new input for kNoTensorWorkBudget instructions is abandoned: it runs as it
// is and is not traced again (frame_compiler.cpp logs it under `skips`).
// After tensor work, as many instructions without any end the graph there:
// a graph break, so the Python code runs in CPython and the rest is traced
// anew by the resume function.
//
// Pending signals are checked here too, every kSignalCheckInterval
// instructions (PyErr_CheckSignals, as CPython's eval loop does): a Ctrl-C
// during a long trace raises KeyboardInterrupt from the frame's call
// promptly, and the frame is traced again at its next call.
#include "tracer/translator.h"

namespace tj::tracer {

namespace {
constexpr int kMaxInstructions = 100000;
constexpr int kNoTensorWorkBudget = 1000;
constexpr int kSignalCheckInterval = 32;
}  // namespace

bool InstructionTranslator::within_trace_budget() {
  TraceShared& s = *shared_;
  if (s.interrupted) return unsupported("interrupted");
  const int traced = ++s.traced_instructions;
  if (traced % kSignalCheckInterval == 0 && PyErr_CheckSignals() < 0) {
    keep_interruption(/*any_error=*/true);  // KeyboardInterrupt, or what a Python signal handler raised
    return unsupported("interrupted");
  }
  if (traced > kMaxInstructions) {
    breakable_ = false;
    s.abandoned = true;
    return unsupported("more than " + std::to_string(kMaxInstructions) +
                       " instructions traced (a loop unrolled too far); the frame runs as it is");
  }
  // Progress is tensor work, a new input read or an input tensor read
  // again (an optimizer's loops over its parameters): walking a deep model's
  // submodules (model.parameters(), named_modules()) reads one module after
  // another before the first tensor op, and is not a pure-Python loop.
  // torch's own Python (Module.named_modules over a deep model, whose
  // submodules were all read with its first `_modules`) leads to tensor
  // work: it does not count against the window (kMaxInstructions bounds it).
  if (size_t size = s.graph->size(), guards = s.guards.guards().size();
      size != s.graph_size_seen || guards != s.guards_seen || s.tensor_reads != s.tensor_reads_seen ||
      in_torch_code()) {
    s.graph_size_seen = size;
    s.guards_seen = guards;
    s.tensor_reads_seen = s.tensor_reads;
    s.last_tensor_work = traced;
  }
  if (traced - s.last_tensor_work < kNoTensorWorkBudget) return true;
  if (s.graph_size_seen == 0) {
    breakable_ = false;
    s.abandoned = s.no_tensor_work = true;
    return unsupported("no tensor work in the first " + std::to_string(kNoTensorWorkBudget) + " traced instructions");
  }
  return unsupported("no tensor work in the last " + std::to_string(kNoTensorWorkBudget) +
                     " traced instructions (Python code runs in CPython)");
}

}  // namespace tj::tracer
