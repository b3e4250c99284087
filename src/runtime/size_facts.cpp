// The SIZE_FACTS guard; see size_facts.h.
#include "runtime/size_facts.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>

#include <ATen/core/Tensor.h>

#include "graph/meta_infer.h"
#include "graph/sym_ints.h"
#include "support/py_errors.h"
#include "support/tensor_bridge.h"

namespace tj::runtime {

namespace {

// The index of the first fact that fails for these inputs (used_inputs'
// tensors, in order), or -1.
int first_failing_fact(const tracer::SizeFacts& facts, const std::vector<at::Tensor>& inputs) {
  std::unique_ptr<graph::Graph> g = facts.graph->clone();
  std::vector<const graph::Node*> fact_nodes;
  for (const auto& [name, value] : facts.facts) fact_nodes.push_back(g->find(name));
  // Only what the facts depend on is inferred again.
  const std::unordered_set<const graph::Node*> needed = graph::nodes_feeding(fact_nodes);
  std::vector<graph::Node*> placeholders = g->placeholders();
  for (size_t i = 0; i < facts.used_inputs.size() && i < inputs.size(); ++i) {
    graph::Node* p = placeholders.at(facts.used_inputs[i]);
    graph::TensorMeta m = *p->meta().tensor();
    m.sizes = inputs[i].sizes().vec();
    m.strides = inputs[i].strides().vec();
    m.storage_offset = inputs[i].storage_offset();
    p->meta().set_tensor(std::move(m));
  }
  for (graph::Node* n : g->nodes())
    if (needed.count(n) && n->kind() == graph::NodeKind::call_function) n->meta().sym_value.reset();
  for (graph::Node* n : g->nodes()) {
    if (!needed.count(n) || n->kind() != graph::NodeKind::call_function) continue;
    bool ok = false;
    try {
      ok = graph::infer_meta(*g, *n).ok();
    } catch (const std::exception&) {
    }
    // A meta kernel written in Python (torch._refs.where's broadcasting
    // check) raises through LibTorch as a python_error that leaves its
    // Python error set. The guard only fails: the trace for these sizes
    // meets the op again, and the frame, if it runs the op, raises eager's
    // own error. Left set, the frame hook would raise the meta kernel's
    // error instead, before the frame ran. An interruption stays set.
    clear_unless_interruption();
    if (!ok) break;  // the facts after it get no value: they fail
  }
  for (size_t i = 0; i < fact_nodes.size(); ++i) {
    const graph::Node* n = fact_nodes[i];
    if (!n || !n->meta().sym_value || *n->meta().sym_value != facts.facts[i].second) return static_cast<int>(i);
  }
  return -1;
}

// The facts of a `direct` SizeFacts on these inputs' sizes: the index of
// the first that fails, or -1.
int first_failing_direct(const tracer::SizeFacts& facts, const std::vector<at::Tensor>& inputs) {
  std::unordered_map<const graph::Node*, int64_t> memo;
  std::function<std::optional<int64_t>(const graph::Node&)> value = [&](const graph::Node& n) -> std::optional<int64_t> {
    if (auto it = memo.find(&n); it != memo.end()) return it->second;
    graph::SizeOf size_of = [&](const graph::Node& t, int64_t dim) -> std::optional<int64_t> {
      for (size_t i = 0; i < facts.used_placeholders.size() && i < inputs.size(); ++i)
        if (facts.used_placeholders[i] == &t) {
          const int64_t rank = inputs[i].dim();
          if (dim < -rank || dim >= rank) return std::nullopt;
          return inputs[i].size(dim);
        }
      return std::nullopt;
    };
    auto v = graph::eval_sym(n, size_of, value);
    if (!v) return std::nullopt;
    memo.emplace(&n, *v);
    return *v;
  };
  for (size_t i = 0; i < facts.fact_nodes.size(); ++i) {
    auto v = facts.fact_nodes[i] ? value(*facts.fact_nodes[i]) : std::nullopt;
    if (!v || *v != facts.facts[i].second) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

bool size_facts_hold(const tracer::SizeFacts& facts, const tj_FrameView& frame, std::string* failed) {
  std::vector<at::Tensor> inputs;
  inputs.reserve(facts.used_inputs.size());
  std::vector<int64_t> key;
  for (size_t index : facts.used_inputs) {
    const tracer::SourcePtr& source = facts.inputs[index];
    PyRef v = read_source(*source, frame);
    bool tensor = v && is_tensor(v.get());
    if (tensor) inputs.push_back(unpack_tensor(v.get()));
    if (!tensor) {
      if (failed) *failed = source->to_string() + " is not a tensor";
      return false;
    }
    if (facts.direct) continue;  // no signature needed
    key.push_back(inputs.back().dim());
    for (int64_t s : inputs.back().sizes()) key.push_back(s);
  }
  int failing;
  if (facts.direct) {
    failing = first_failing_direct(facts, inputs);
  } else {
    std::lock_guard<std::mutex> lock(facts.mu);
    auto it = facts.checked.find(key);
    if (it == facts.checked.end()) {
      if (facts.checked.size() >= 1024) facts.checked.clear();
      it = facts.checked.emplace(std::move(key), first_failing_fact(facts, inputs)).first;
    }
    failing = it->second;
  }
  if (failing >= 0 && failed) *failed = facts.descriptions[static_cast<size_t>(failing)] + " no longer holds";
  return failing < 0;
}

}  // namespace tj::runtime
