// The backend interface: what turns a graph into something that runs.
//
// A backend compiles one graph plus the description of its inputs into a
// `CompiledFn`: tensors in (one per placeholder, in order), tensors out (the
// output node's argument flattened, in order). Compile failures a user can
// cause are values (`Expected`); a failure while running (an ATen
// error such as an IndexError) is thrown as the `c10::Error` ATen raised, so
// the runtime can re-raise eager's own exception.
//
// Backends are found by name in one registry. `functional` says whether the
// backend wants the AOT pipeline (functionalization, joint graph and
// partition when inputs require grad) in front of it: `eager` runs the
// captured graph as it is, `aot_eager`, `llvm` and `nvrtc` consume functional
// graphs. A Python callable passed as `backend=` is not in this registry:
// the runtime wraps it (it needs CPython).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <c10/util/ArrayRef.h>

#include "graph/graph.h"
#include "support/expected.h"

namespace tj::jit {

using CompiledFn = std::function<std::vector<at::Tensor>(c10::ArrayRef<at::Tensor>)>;

struct Backend {
  std::string name;
  // One line for `--help` and the ValueError listing the backends.
  std::string description;
  // Wants functional graphs from AOT in front of it.
  bool functional = false;
  // Fuses pointwise ops into its kernels, so recomputing them in the
  // backward costs little time and saves memory (compile/aot/partition.h).
  bool fuses_pointwise = false;
  // Compiles `graph` for inputs described by `inputs` (one per placeholder).
  std::function<Expected<CompiledFn>(std::shared_ptr<const graph::Graph> graph,
                                     const std::vector<graph::TensorMeta>& inputs)>
      compile;
  // Optional (llvm): one function for every size of a dynamic entry.
  // `compile_point` compiles as `compile` does and leaves in `point` what
  // `compile_all_sizes` needs; given the points of one graph compiled at
  // three or more sizes (graphs equal but for their ints),
  // `compile_all_sizes` makes a function that serves every size of them
  // the points' sizes allow (jit/program_template.h), or says why it cannot.
  using SizePoint = std::shared_ptr<const void>;
  std::function<Expected<CompiledFn>(std::shared_ptr<const graph::Graph> graph,
                                     const std::vector<graph::TensorMeta>& inputs, SizePoint* point)>
      compile_point;
  struct AllSizes {
    CompiledFn fn;
    // "" when `fn` serves inputs of these sizes (one meta per placeholder),
    // else why not: the caller must not call it with others.
    std::function<std::string(const std::vector<graph::TensorMeta>& inputs)> mismatch;
  };
  std::function<Expected<AllSizes>(const std::vector<SizePoint>& points)> compile_all_sizes;
};

// Adds (or replaces) a backend under `backend.name`.
void register_backend(Backend backend);
// The backend called `name`, or nullptr.
const Backend* find_backend(std::string_view name);
// Every registered name, the default (`llvm`) first, then in registration order.
std::vector<std::string> backend_names();

}  // namespace tj::jit
