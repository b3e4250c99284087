// lint(): checks every invariant of a Graph and says which one broke.
//   - every node belongs to this graph and has a unique, non-empty name;
//   - every node an arg mentions is in this graph (no dangling node) and is
//     defined before its user;
//   - each node's users list is exactly the set of nodes that use it;
//   - exactly one output node, and it is the last node;
//   - call_function nodes have an op, other kinds none; getitem is (node, int).
// Passes call lint_in_debug() after they run: in builds without NDEBUG it
// prints the graph and the broken invariant and aborts.
#pragma once

#include <string_view>

#include "graph/graph.h"
#include "support/expected.h"

namespace tj::graph {

Status lint(const Graph& graph);

void lint_in_debug(const Graph& graph, std::string_view after_pass);

// While one lives on this thread, lint_in_debug checks nothing: a pipeline
// of passes lints once, when it calls finish() after its last pass (the
// message then names the pipeline; a pipeline that failed midway lints
// nothing, as a failing pass does not). `TRACEJIT_LINT_EACH_PASS=1` lints
// after each pass again, to blame one.
class LintAtEnd {
 public:
  LintAtEnd(const Graph& graph, std::string_view pipeline);
  ~LintAtEnd();
  void finish();
  LintAtEnd(const LintAtEnd&) = delete;
  LintAtEnd& operator=(const LintAtEnd&) = delete;

 private:
  const Graph& graph_;
  std::string_view pipeline_;
  bool deferring_;
};

}  // namespace tj::graph
