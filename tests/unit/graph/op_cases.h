// The op cases shared by the interpreter/meta test and the codegen test:
// each builds a small graph of ATen ops and says what direct ATen calls
// compute for the same inputs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "graph/graph.h"

namespace tj::graph::testing {

struct OpCase {
  std::string name;
  std::function<std::vector<at::Tensor>()> inputs;
  // Adds the nodes and the output to a graph whose placeholders are given.
  std::function<void(Graph&, const std::vector<Node*>&)> build;
  // Direct ATen calls on the same inputs (which it may mutate).
  std::function<std::vector<at::Tensor>(std::vector<at::Tensor>&)> eager;
};

const std::vector<OpCase>& op_cases();

// A graph for `c` with placeholders x0, x1, ... described from `inputs`.
std::unique_ptr<Graph> build_case(const OpCase& c, const std::vector<at::Tensor>& inputs);

}  // namespace tj::graph::testing
