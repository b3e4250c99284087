// One backend program per AOT graph for every size of an AOT size template
// (issue 15; compile/aot/runtime_wrapper.h's aot_specialize, the llvm backend's
// compile_all_sizes, jit/program_template.h).
//
// The first sizes a template serves are compiled on their own, through the
// backend's compile_point, which keeps each size's lowered program. Once
// three sizes at which every size class of the template took a distinct
// value are in (pairwise distinct classes, so that no two classes can be
// told apart only later), the backend makes one forward (and, with grad,
// one backward) program of them. Each program's inputs must come in sizes
// it serves: the sizes of the forward's and the backward's placeholders
// (the backward's are saved tensors and tangents, which the forward makes)
// are fitted as forms of the template's classes at those three sizes, so
// that a later size's are known before anything runs, and a size whose
// inputs a program does not serve is compiled on its own, as before.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "graph/size_template.h"
#include "jit/backend.h"
#include "support/expected.h"

namespace tj::jit {

// Each placeholder's meta (an empty one for a placeholder without a tensor):
// what a backend's compile is given.
std::vector<graph::TensorMeta> placeholder_metas(const graph::Graph& g);

class AllSizePrograms {
 public:
  struct Served {
    CompiledFn forward;
    CompiledFn backward;  // with grad
  };
  // The programs, when made and serving the template's given inputs of
  // these metas.
  std::optional<Served> serving(const graph::aot::SizeTemplate& t, const std::vector<graph::TensorMeta>& given) const;

  // Compiles one size's forward (and backward) graph with `backend`,
  // keeping its programs as a point while fewer than three are in; the
  // third point that allows it makes the programs for every size.
  // `given`: the template's given inputs' metas at this size.
  struct Compiled {
    CompiledFn forward;
    CompiledFn backward;
  };
  Expected<Compiled> compile(const graph::aot::SizeTemplate& t, const std::vector<graph::TensorMeta>& given,
                             const std::shared_ptr<const graph::Graph>& forward,
                             const std::shared_ptr<const graph::Graph>& backward, const Backend& backend,
                             const std::string& where);

 private:
  struct Point {
    std::vector<graph::TensorMeta> given, forward_inputs, backward_inputs;
    Backend::SizePoint forward, backward;
  };
  // A program and the sizes of its placeholders as forms of the template's classes.
  struct Program {
    Backend::AllSizes fn;
    std::vector<graph::TensorMeta> inputs;  // at the first point (dtypes, ranks)
    std::vector<std::vector<graph::aot::SizeInt>> sizes;
    bool serves(const graph::aot::SizeTemplate& t, const std::vector<graph::TensorMeta>& given) const;
  };
  void decide(const graph::aot::SizeTemplate& t, const Backend& backend, bool with_backward, const std::string& where);
  Expected<Program> make(const graph::aot::SizeTemplate& t, const Backend& backend, bool backward) const;

  mutable std::mutex mutex_;
  std::vector<Point> points_;
  std::optional<Program> forward_, backward_;
  bool decided_ = false;  // made, or given up
  int tried_ = 0;         // sizes compiled as points
};

}  // namespace tj::jit
