// A graph with data-dependent sizes compiled in stages; see unbacked_stages.h.
#include "runtime/unbacked_stages.h"

#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include "graph/interpreter.h"
#include "graph/meta_infer.h"
#include "graph/printer.h"
#include "graph/unbacked_sizes.h"
#include "graph/unbacked_split.h"
#include "runtime/code_cache.h"
#include "runtime/cpp_errors.h"
#include "runtime/runtime_state.h"
#include "runtime/size_probes.h"
#include "support/log.h"
#include "support/py_errors.h"
#include "support/py_ref.h"
#include "support/tensor_bridge.h"

namespace tj::runtime {

namespace {

constexpr size_t kMaxLevelSizes = 64;         // then the level runs op by op (counted in sizes_run_op_by_op)
constexpr size_t kMaxTemplateLevelSizes = 4096;  // ... once its AOT size template serves its sizes
constexpr size_t kMaxTemplatePoints = 8;       // captures tried for a template; then sizes keep capturing

struct KeyHash {
  size_t operator()(const std::vector<int64_t>& v) const {
    size_t h = v.size();
    for (int64_t x : v) h = h * 1000003u ^ std::hash<int64_t>{}(x);
    return h;
  }
};

// One stage (the head, or the tail of one cut) compiled per size signature
// of its inputs; its first AOT captures made one AOT size template (as a
// dynamic entry's, compiled_graph.cpp), so later sizes compile with no
// capture. Only sizes of 2 or more are captured for the template or served
// by it (a count of 0 or 1, an empty or a one-row result, compiles on its
// own, as a dynamic entry specializes 0 and 1), and never a stage that
// reads 0-d tensors as sizes (their values are not sizes of its inputs:
// its `carried` copy, which reads them as sizes, is templated instead).
struct SizedLevel {
  std::shared_ptr<const graph::Graph> graph;
  std::vector<graph::InputItem> items;  // in `graph`: the sizes read from 0-d input tensors
  BackendChoice choice;
  std::string where;  // "f (after aten::nonzero (at f.py:3))"
  std::unordered_map<std::vector<int64_t>, std::shared_ptr<jit::CompiledFn>, KeyHash> by_key;
  std::shared_ptr<jit::CompiledFn> op_by_op;
  std::vector<std::shared_ptr<const jit::AotPoint>> points;  // captures kept for the template
  std::vector<std::vector<std::vector<int64_t>>> point_sizes;  // [point][input]: its inputs' sizes
  std::vector<std::vector<int64_t>> first_strides;  // [input]: the first point's inputs' strides
  std::vector<int64_t> first_offsets;  // ... offsets
  std::vector<size_t> first_alias;     // ... storage groups (storage_groups)
  std::shared_ptr<const compile::AotBoundary> boundary;
  std::shared_ptr<const jit::AotTemplate> aot_template;
  bool told_no_template = false;
  // The kept capture a template was last tried from with probes
  // (size_probes.h): each first point is probed from once.
  const jit::AotPoint* probed_from = nullptr;
  // The same stage with its 0-d tensors read as sizes of extra [v, 0]
  // inputs (graph::items_as_input_sizes): values >= 0 run there, so its
  // captures make an AOT size template over the values too. Null without items.
  std::shared_ptr<SizedLevel> carried;
  size_t value_inputs = 0;  // in a `carried` level: the last inputs, values read as sizes
};

std::string describe_sizes(c10::ArrayRef<at::Tensor> inputs) {
  std::string out;
  for (const at::Tensor& t : inputs) out += (out.empty() ? "" : " ") + c10::str(t.sizes());
  return out;
}

// What the level's compile depends on: the grad mode, each input's rank,
// sizes, strides, offset, dtype and requires_grad, and the values of the
// 0-d tensors read as sizes.
std::vector<int64_t> level_key(const SizedLevel& level, c10::ArrayRef<at::Tensor> inputs, std::vector<int64_t>* items) {
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

std::vector<std::vector<int64_t>> sizes_of(c10::ArrayRef<at::Tensor> inputs) {
  std::vector<std::vector<int64_t>> out;
  for (const at::Tensor& t : inputs) out.push_back(t.sizes().vec());
  return out;
}

// A new capture of `level` kept for its AOT size template, and the template
// made once three captures allow it. A capture whose sizes differ from the
// kept ones in a dim of size 0 or 1 is not kept (when the kept ones have
// it, they are dropped and the points start again from this one).
void keep_point(SizedLevel& level, const CompiledStep& step, c10::ArrayRef<at::Tensor> inputs) {
  if (!level.items.empty() || level.aot_template || level.points.size() >= kMaxTemplatePoints ||
      !runtime_config().aot_size_templates || !step.aot_point || !step.aot_boundary)
    return;
  std::vector<std::vector<int64_t>> sizes = sizes_of(inputs);
  bool restart = !level.boundary || step.aot_boundary->extra_outputs != level.boundary->extra_outputs ||
                 step.aot_boundary->fixes != level.boundary->fixes;
  if (!restart && !level.point_sizes.empty()) {
    const std::vector<std::vector<int64_t>>& kept = level.point_sizes.front();
    for (size_t i = 0; i < sizes.size() && i < kept.size(); ++i)
      for (size_t d = 0; d < sizes[i].size() && d < kept[i].size(); ++d) {
        if (sizes[i][d] == kept[i][d]) continue;
        if (sizes[i][d] < 2) return;  // a 0 or 1 where the kept sizes vary: compiled on its own
        if (kept[i][d] < 2) restart = true;
      }
  }
  if (restart) {
    level.points.clear();
    level.point_sizes.clear();
    level.first_strides.clear();
    level.first_offsets.clear();
    level.boundary = step.aot_boundary;
  }
  if (level.points.empty()) {
    for (const at::Tensor& t : inputs) {
      level.first_strides.push_back(t.strides().vec());
      level.first_offsets.push_back(t.storage_offset());
    }
    level.first_alias = storage_groups(inputs);
  }
  level.points.push_back(step.aot_point);
  level.point_sizes.push_back(std::move(sizes));
  if (level.points.size() < 3) return;
  auto made = jit::aot_generalize(level.points);
  if (!made) {
    TJ_LOG(dynamic, "{}: no AOT size template from {} captures yet: {}", level.where, level.points.size(),
           made.error().message);
    return;
  }
  level.aot_template = std::move(*made);
  TJ_LOG(dynamic, "{}: one AOT graph serves every size of 2 or more from now on (a template of {} captures, {} int "
         "argument(s) computed from the sizes)", level.where, level.points.size(),
         jit::aot_template_graph(*level.aot_template).symbolic_ints);
  level.points.clear();
  level.point_sizes.clear();
  level.first_strides.clear();
  level.first_offsets.clear();
}

// Whether the level's template may serve these inputs: every dim that
// varies between its captures is 2 or more here (template_mismatch checks
// the rest).
bool template_may_serve(const SizedLevel& level, c10::ArrayRef<at::Tensor> inputs) {
  if (!level.aot_template || !level.items.empty() || !runtime_config().aot_size_templates) return false;
  for (const auto& cls : jit::aot_template_graph(*level.aot_template).classes)
    for (const graph::aot::SizeVar& v : cls) {
      if (static_cast<size_t>(v.placeholder) >= inputs.size()) return false;
      const at::Tensor& t = inputs[static_cast<size_t>(v.placeholder)];
      if (v.dim >= t.dim() || t.size(v.dim) < 2) return false;
    }
  return true;
}

// The level compiled for these inputs: its placeholders' metas are theirs,
// its sym_items their values; from its AOT size template when that serves
// them, else captured (and kept for the template). Shapes that do not hold
// (eager raises) and a backend that fails run the level op by op, which
// raises eager's error or computes eager's values.
jit::CompiledFn compile_level(SizedLevel& level, c10::ArrayRef<at::Tensor> inputs, const std::vector<int64_t>& items) {
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
    PyErr_Clear();  // eager raises it when the level runs op by op
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
  if (!level.aot_template && level.items.empty() && level.points.size() == 1 && level.boundary &&
      level.probed_from != level.points[0].get() && runtime_config().aot_size_templates &&
      !graph::first_unbacked_node(*g)) {
    // The stage's second size signature: its template from its kept capture
    // and probes at sizes of our choosing, so that no capture is needed.
    level.probed_from = level.points[0].get();
    ProbeRequest r;
    r.traced = level.graph.get();
    r.first = level.points[0];
    r.boundary = level.boundary.get();
    r.first_sizes = level.point_sizes[0];
    r.first_strides = level.first_strides;
    r.first_offsets = level.first_offsets;
    r.first_alias = level.first_alias;
    r.metas_of_inputs = true;
    r.value_inputs = level.value_inputs;
    r.choice = level.choice;
    r.where = level.where;
    std::string why;
    level.aot_template = template_from_probes(r, inputs, &why);
    if (level.aot_template) {
      TJ_LOG(dynamic, "{}: one AOT graph serves every size of 2 or more from now on (a template of 1 capture and "
             "probes, {} int argument(s) computed from the sizes)", level.where,
             jit::aot_template_graph(*level.aot_template).symbolic_ints);
      level.points.clear();
      level.point_sizes.clear();
    } else {
      TJ_LOG(dynamic, "{}: no AOT size template from probes ({}); sizes are captured until one is made", level.where,
             why);
    }
  }
  if (template_may_serve(level, inputs) && !graph::first_unbacked_node(*g)) {
    std::string why;
    CompiledStep step = compile_from_aot_template(g, *level.aot_template, *level.boundary, examples, level.choice,
                                                  level.where, &why);
    if (step.ok && step.fn) {
      bump(Counter::aot_size_reuses);
      TJ_LOG(dynamic, "{}: compiled for sizes {} from the AOT size template (no capture)", level.where,
             describe_sizes(inputs));
      return std::move(step.fn);
    }
    if (PyErr_Occurred()) {  // config.debug_check_aot_templates found the template wrong: never quiet
      FetchedError e = FetchedError::fetch();
      e.normalize();
      throw std::runtime_error(e.message().value_or("tracejit internal error: an AOT size template failed its check"));
    }
    TJ_LOG(dynamic, "{}: the AOT size template does not serve sizes {} ({}); capturing for them", level.where,
           describe_sizes(inputs), why);
  }
  CompiledStep step = compile_graph_step(g, examples, level.choice, level.where);
  if (!step.ok || step.python_fn || !step.fn) {
    PyErr_Clear();  // the backend's verdict, already warned or logged: this size runs op by op
    TJ_LOG(dynamic, "{}: not compiled for sizes {}; this size runs op by op", level.where, describe_sizes(inputs));
    return interpret_fn(level.graph);
  }
  TJ_LOG(dynamic, "{}: compiled for sizes {}{}", level.where, describe_sizes(inputs),
         items.empty() ? "" : " (" + c10::str(c10::IntArrayRef(items)) + " read as sizes)");
  keep_point(level, step, inputs);
  return std::move(step.fn);
}

std::vector<at::Tensor> run_level(SizedLevel& level, c10::ArrayRef<at::Tensor> inputs) {
  if (level.carried && runtime_config().aot_size_templates) {
    // Each value read as a size passed as the size of a tensor with no elements.
    std::vector<at::Tensor> carried(inputs.begin(), inputs.end());
    for (const graph::InputItem& item : level.items) {
      const int64_t v = inputs[static_cast<size_t>(item.input)].item<int64_t>();
      if (v < 0) break;  // a negative bound (x[:-t]): the stage with the value bound, below
      carried.push_back(at::empty({v, 0}, at::TensorOptions().dtype(at::kFloat)));
    }
    if (carried.size() == inputs.size() + level.items.size()) return run_level(*level.carried, carried);
  }
  std::vector<int64_t> items;
  std::vector<int64_t> key = level_key(level, inputs, &items);
  auto it = level.by_key.find(key);
  if (it == level.by_key.end()) {
    const size_t most = level.aot_template ? kMaxTemplateLevelSizes : kMaxLevelSizes;
    if (level.by_key.size() >= most) {
      if (!level.op_by_op) {
        TJ_LOG(dynamic, "{}: {} sizes compiled already; other sizes run op by op", level.where, most);
        level.op_by_op = std::make_shared<jit::CompiledFn>(interpret_fn(level.graph));
      }
      bump(Counter::sizes_run_op_by_op);
      return (*level.op_by_op)(inputs);
    }
    auto fn = std::make_shared<jit::CompiledFn>(compile_level(level, inputs, items));
    it = level.by_key.emplace(std::move(key), std::move(fn)).first;
  }
  std::shared_ptr<jit::CompiledFn> fn = it->second;  // kept alive while it runs
  return (*fn)(inputs);
}

struct Stages {
  graph::UnbackedStages cut;
  std::shared_ptr<SizedLevel> head;
  std::optional<graph::PreparedGraph> middle;
  std::shared_ptr<SizedLevel> tail;
};

std::shared_ptr<SizedLevel> make_level(std::shared_ptr<const graph::Graph> g, const BackendChoice& choice,
                                       std::string where) {
  auto level = std::make_shared<SizedLevel>();
  level->items = graph::input_items(*g);
  level->graph = std::move(g);
  level->choice = choice;
  level->where = std::move(where);
  if (!level->items.empty())
    if (std::shared_ptr<graph::Graph> carried = graph::items_as_input_sizes(*level->graph))
    {
      level->carried = make_level(std::move(carried), choice, level->where + " (values read as sizes)");
      level->carried->value_inputs = level->items.size();
    }
  return level;
}

// What a stage's compile depends on besides its inputs: each node's kind,
// name, target, args, kwargs and tags, the attribute tensors (by identity)
// and the autograd function bodies; not the metas, which compile_level
// infers again from the inputs. The cache epoch and the backend choice too.
std::string level_identity(const graph::Graph& g, const BackendChoice& choice) {
  std::string out = std::to_string(cache_epoch()) + " " + choice.name + (choice.suppress_errors ? " s" : " -") + "\n";
  for (const graph::Node* n : g.nodes()) {
    out += std::string(graph::node_kind_name(n->kind())) + " " + n->name() + " " + n->target() + " " +
           graph::format_arg(graph::Arg::tuple(n->args()));
    for (const graph::Kwarg& kw : n->kwargs()) out += " " + kw.first + "=" + graph::format_arg(kw.second);
    for (const auto& [tag, text] : graph::tag_texts(n->meta().tags)) out += " " + tag + ":" + text;
    if (n->meta().unbacked) out += " unbacked";
    out += "\n";
  }
  for (const std::string& name : g.attr_names())
    out += "attr " + name + " " + std::to_string(reinterpret_cast<uintptr_t>(g.attr(name)->unsafeGetTensorImpl())) + "\n";
  for (const std::string& name : g.autograd_function_names())
    out += "fn " + name + " " + std::to_string(reinterpret_cast<uintptr_t>(g.autograd_function(name).get())) + "\n";
  return out;
}

// The level of a stage, shared by every entry whose stage is the same graph
// (level_identity): a frame's static first entry and the dynamic entry
// traced at its second size cut the same head and tail, so the dynamic
// entry's sizes are served by the captures the first one kept (its AOT size
// template from that capture and probes) instead of capturing each stage
// again. `created`: whether no entry had it.
std::shared_ptr<SizedLevel> shared_level(std::shared_ptr<const graph::Graph> g, const BackendChoice& choice,
                                         std::string where, bool* created) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::weak_ptr<SizedLevel>> levels;
  *created = false;
  if (choice.python_callable) {
    *created = true;
    return make_level(std::move(g), choice, std::move(where));
  }
  std::string identity = level_identity(*g, choice);
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = levels.find(identity); it != levels.end())
    if (std::shared_ptr<SizedLevel> level = it->second.lock()) return level;
  for (auto it = levels.begin(); it != levels.end();) it = it->second.expired() ? levels.erase(it) : std::next(it);
  std::shared_ptr<SizedLevel> level = make_level(std::move(g), choice, std::move(where));
  levels[std::move(identity)] = level;
  *created = true;
  return level;
}

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
  bool created = false;
  if (c.head.graph)
    stages->head = shared_level(c.head.graph, choice, where + " (before " + c.source + ")", &created);
  if (c.head.graph && !created) {
    TJ_LOG(dynamic, "{}: the stage before {} is one an earlier entry compiled: its captures serve this entry's sizes",
           where, c.source);
  } else if (c.head.graph) {
    CompiledStep head = compile_graph_step(c.head.graph, example_inputs, choice, stages->head->where);
    if (!head.ok) return head;  // BackendCompilerFailed, raised
    if (head.python_fn || !head.fn) {
      *why = "the head did not compile to a function";
      return std::nullopt;
    }
    // The head's first size, compiled now (its error raised now); other
    // sizes compile when they come.
    std::vector<at::Tensor> first;
    for (PyObject* t : example_inputs) first.push_back(unpack_tensor(t));
    std::vector<int64_t> items;
    std::vector<int64_t> key = level_key(*stages->head, first, &items);
    keep_point(*stages->head, head, first);
    stages->head->by_key.emplace(std::move(key), std::make_shared<jit::CompiledFn>(std::move(head.fn)));
  }
  if (c.tail.graph) stages->tail = shared_level(c.tail.graph, choice, where + " (after " + c.source + ")", &created);
  // Without size nodes folded by the cut, the stages serve every size of
  // the graph's inputs (each stage compiles per size signature).
  out.serves_every_size = c.folded_sizes == 0;
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
    if (stages->head) scatter(c.head.outputs, run_level(*stages->head, inputs));
    if (stages->middle) {
      auto r = stages->middle->run_tensors(gather(c.middle.inputs));
      if (!r) throw std::runtime_error(r.error().message);
      scatter(c.middle.outputs, std::move(*r));
    }
    if (stages->tail) scatter(c.tail.outputs, run_level(*stages->tail, gather(c.tail.inputs)));
    return gather(c.results);
  };
  return out;
}

}  // namespace tj::runtime
