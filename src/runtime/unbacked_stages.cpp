// A graph with data-dependent sizes compiled in stages; see unbacked_stages.h.
#include "runtime/unbacked_stages.h"

#include <stdexcept>
#include <unordered_map>

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include "graph/interpreter.h"
#include "graph/meta_infer.h"
#include "graph/unbacked_split.h"
#include "runtime/cpp_errors.h"
#include "runtime/runtime_state.h"
#include "support/log.h"
#include "support/py_ref.h"
#include "support/tensor_bridge.h"

namespace tj::runtime {

namespace {

constexpr size_t kMaxTailSizes = 64;  // then the tail runs op by op (counted in sizes_run_op_by_op)

struct KeyHash {
  size_t operator()(const std::vector<int64_t>& v) const {
    size_t h = v.size();
    for (int64_t x : v) h = h * 1000003u ^ std::hash<int64_t>{}(x);
    return h;
  }
};

// The tail of one cut: compiled per size signature of its inputs.
struct TailLevel {
  std::shared_ptr<const graph::Graph> graph;
  std::vector<graph::InputItem> items;  // in `graph`: the sizes read from 0-d input tensors
  BackendChoice choice;
  std::string where;  // "f (after aten::nonzero (at f.py:3))"
  std::unordered_map<std::vector<int64_t>, std::shared_ptr<jit::CompiledFn>, KeyHash> by_key;
  std::shared_ptr<jit::CompiledFn> op_by_op;
};

std::string describe_sizes(c10::ArrayRef<at::Tensor> inputs) {
  std::string out;
  for (const at::Tensor& t : inputs) out += (out.empty() ? "" : " ") + c10::str(t.sizes());
  return out;
}

// What the tail's compile depends on: the grad mode, each input's rank,
// sizes, strides, offset, dtype and requires_grad, and the values of the
// 0-d tensors read as sizes.
std::vector<int64_t> tail_key(const TailLevel& level, c10::ArrayRef<at::Tensor> inputs, std::vector<int64_t>* items) {
  std::vector<int64_t> key{at::GradMode::is_enabled() ? 1 : 0};
  for (const at::Tensor& t : inputs) {
    key.push_back(t.dim());
    for (int64_t s : t.sizes()) key.push_back(s);
    for (int64_t s : t.strides()) key.push_back(s);
    key.push_back(t.storage_offset());
    key.push_back(static_cast<int64_t>(t.scalar_type()) * 2 + (t.requires_grad() ? 1 : 0));
  }
  for (const graph::InputItem& item : level.items) {
    const int64_t v = inputs[static_cast<size_t>(item.input)].item<int64_t>();
    items->push_back(v);
    key.push_back(v);
  }
  return key;
}

jit::CompiledFn interpret_fn(std::shared_ptr<const graph::Graph> g) {
  return [g](c10::ArrayRef<at::Tensor> inputs) { return graph::interpret_or_throw(*g, inputs); };
}

// The tail compiled for these inputs: its placeholders' metas are theirs,
// its sym_items their values; shapes that do not hold (eager raises) and a
// backend that fails run the tail op by op, which raises eager's error or
// computes eager's values.
jit::CompiledFn compile_tail(TailLevel& level, c10::ArrayRef<at::Tensor> inputs, const std::vector<int64_t>& items) {
  std::shared_ptr<graph::Graph> g = level.graph->clone();
  std::vector<graph::Node*> placeholders = g->placeholders();
  std::unordered_map<const void*, int64_t> storage_ids;
  for (size_t i = 0; i < placeholders.size() && i < inputs.size(); ++i) {
    graph::TensorMeta m = graph::TensorMeta::of(inputs[i]);
    const void* storage = inputs[i].has_storage() ? inputs[i].storage().unsafeGetStorageImpl() : nullptr;
    if (!storage) {
      m.storage_id = g->new_storage_id();
    } else if (auto it = storage_ids.find(storage); it != storage_ids.end()) {
      m.storage_id = it->second;
    } else {
      m.storage_id = storage_ids[storage] = g->new_storage_id();
    }
    placeholders[i]->meta().set_tensor(m);
  }
  std::vector<graph::InputItem> bound = graph::input_items(*g);
  for (size_t i = 0; i < bound.size() && i < items.size(); ++i) graph::bind_item(*g, bound[i].item, items[i]);
  Status inferred = ok_status();
  if (!run_as_torch_binding([&] { inferred = graph::infer_meta_all(*g); }) || !inferred.ok()) {
    PyErr_Clear();  // eager raises it when the tail runs op by op
    TJ_LOG(dynamic, "{}: the shapes do not hold for sizes {} ({}); this size runs op by op", level.where,
           describe_sizes(inputs), inferred.ok() ? "an error" : inferred.error().message);
    return interpret_fn(level.graph);
  }
  std::vector<PyRef> owned;
  std::vector<PyObject*> examples;
  for (const at::Tensor& t : inputs) {
    owned.push_back(PyRef::steal(wrap_tensor(t)));
    if (!owned.back()) throw std::runtime_error("tracejit: could not wrap a tensor");
    examples.push_back(owned.back().get());
  }
  CompiledStep step = compile_graph_step(g, examples, level.choice, level.where);
  if (!step.ok || step.python_fn || !step.fn) {
    PyErr_Clear();  // the backend's verdict, already warned or logged: this size runs op by op
    TJ_LOG(dynamic, "{}: not compiled for sizes {}; this size runs op by op", level.where, describe_sizes(inputs));
    return interpret_fn(level.graph);
  }
  TJ_LOG(dynamic, "{}: compiled for sizes {}{}", level.where, describe_sizes(inputs),
         items.empty() ? "" : " (" + c10::str(c10::IntArrayRef(items)) + " read as sizes)");
  return std::move(step.fn);
}

std::vector<at::Tensor> run_tail(TailLevel& level, c10::ArrayRef<at::Tensor> inputs) {
  std::vector<int64_t> items;
  std::vector<int64_t> key = tail_key(level, inputs, &items);
  auto it = level.by_key.find(key);
  if (it == level.by_key.end()) {
    if (level.by_key.size() >= kMaxTailSizes) {
      if (!level.op_by_op) {
        TJ_LOG(dynamic, "{}: {} sizes compiled already; other sizes run op by op", level.where, kMaxTailSizes);
        level.op_by_op = std::make_shared<jit::CompiledFn>(interpret_fn(level.graph));
      }
      bump(Counter::sizes_run_op_by_op);
      return (*level.op_by_op)(inputs);
    }
    auto fn = std::make_shared<jit::CompiledFn>(compile_tail(level, inputs, items));
    it = level.by_key.emplace(std::move(key), std::move(fn)).first;
  }
  std::shared_ptr<jit::CompiledFn> fn = it->second;  // kept alive while it runs
  return (*fn)(inputs);
}

struct Stages {
  graph::UnbackedStages cut;
  jit::CompiledFn head;
  std::optional<graph::PreparedGraph> middle;
  std::shared_ptr<TailLevel> tail;
};

}  // namespace

std::optional<CompiledStep> compile_in_stages(std::shared_ptr<const graph::Graph> graph,
                                              const std::vector<PyObject*>& example_inputs,
                                              const BackendChoice& choice, const std::string& where,
                                              std::string* why) {
  auto cut = graph::split_at_unbacked(*graph);
  if (!cut) {
    *why = cut.error().message;
    return std::nullopt;
  }
  auto stages = std::make_shared<Stages>();
  stages->cut = std::move(*cut);
  const graph::UnbackedStages& c = stages->cut;
  if (c.middle.graph) {
    auto prepared = graph::PreparedGraph::prepare(*c.middle.graph);
    if (!prepared) {
      *why = prepared.error().message;
      return std::nullopt;
    }
    stages->middle = std::move(*prepared);
  }
  CompiledStep out;
  if (c.head.graph) {
    CompiledStep head = compile_graph_step(c.head.graph, example_inputs, choice, where + " (before " + c.source + ")");
    if (!head.ok) return head;  // BackendCompilerFailed, raised
    if (head.python_fn || !head.fn) {
      *why = "the head did not compile to a function";
      return std::nullopt;
    }
    stages->head = std::move(head.fn);
  }
  if (c.tail.graph) {
    stages->tail = std::make_shared<TailLevel>();
    stages->tail->graph = c.tail.graph;
    stages->tail->items = graph::input_items(*c.tail.graph);
    stages->tail->choice = choice;
    stages->tail->where = where + " (after " + c.source + ")";
  }
  TJ_LOG(dynamic, "{}: data-dependent sizes from {}: {} node(s) compiled before, {} run op by op, {} compiled per "
         "size after", where, c.source, c.head.graph ? c.head.graph->size() : 0,
         c.middle.graph ? c.middle.graph->size() : 0, c.tail.graph ? c.tail.graph->size() : 0);
  out.fn = [stages](c10::ArrayRef<at::Tensor> inputs) {
    const graph::UnbackedStages& c = stages->cut;
    std::vector<at::Tensor> env(static_cast<size_t>(c.slots));
    for (size_t i = 0; i < inputs.size() && i < env.size(); ++i) env[i] = inputs[i];
    auto gather = [&](const std::vector<int>& slots) {
      std::vector<at::Tensor> v;
      v.reserve(slots.size());
      for (int s : slots) v.push_back(env[static_cast<size_t>(s)]);
      return v;
    };
    auto scatter = [&](const std::vector<int>& slots, std::vector<at::Tensor> values) {
      if (values.size() != slots.size()) throw std::runtime_error("tracejit: a stage returned too few values");
      for (size_t k = 0; k < slots.size(); ++k) env[static_cast<size_t>(slots[k])] = std::move(values[k]);
    };
    if (stages->head) scatter(c.head.outputs, stages->head(inputs));
    if (stages->middle) {
      auto r = stages->middle->run_tensors(gather(c.middle.inputs));
      if (!r) throw std::runtime_error(r.error().message);
      scatter(c.middle.outputs, std::move(*r));
    }
    if (stages->tail) scatter(c.tail.outputs, run_tail(*stages->tail, gather(c.tail.inputs)));
    return gather(c.results);
  };
  return out;
}

}  // namespace tj::runtime
