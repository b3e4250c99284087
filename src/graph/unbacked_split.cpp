// Cutting a graph with data-dependent sizes into a head, a middle and a
// tail; see unbacked_split.h.
#include "graph/unbacked_split.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include <ATen/core/Tensor.h>

#include "graph/effects.h"
#include "graph/op_registry.h"
#include "graph/sym_ints.h"
#include "graph/unbacked_sizes.h"

namespace tj::graph {

namespace {

enum class Where { input, attr, head, middle, tail };

bool is_item(const Node& n) { return n.kind() == NodeKind::call_function && n.op()->sym == SymOp::item; }

// A stage's nodes copied into a graph of their own: nodes of other stages
// they read become placeholders (`inputs`, in first-use order; `given` first
// when set), attributes are read again, `outputs` are returned as a tuple.
std::shared_ptr<Graph> copy_stage(const Graph& from, const std::vector<Node*>& nodes,
                                  const std::vector<Node*>& outputs, const std::vector<Node*>* given,
                                  std::vector<Node*>* inputs) {
  auto g = std::make_shared<Graph>();
  std::unordered_map<const Node*, Node*> map;
  std::unordered_set<const Node*> inside(nodes.begin(), nodes.end());
  auto add_input = [&](Node* n) {
    Node* p = g->placeholder(n->name(), n->meta().tensor() ? std::optional<TensorMeta>(*n->meta().tensor())
                                                           : std::nullopt);
    // an input of the graph keeps its tags (a Python number, ...); a value
    // of another stage only its tensor and place (not its op's flags)
    if (n->kind() == NodeKind::placeholder) p->meta() = n->meta();
    p->meta().loc = n->meta().loc;
    map[n] = p;
    inputs->push_back(n);
  };
  if (given)
    for (Node* n : *given) add_input(n);
  for (Node* n : nodes)
    for (Node* in : n->inputs())
      if (!inside.count(in) && !map.count(in) && in->kind() != NodeKind::get_attr) add_input(in);
  for (Node* n : outputs)
    if (!inside.count(n) && !map.count(n)) add_input(n);
  auto remap = [&](Node* n) -> Node* {
    if (auto it = map.find(n); it != map.end()) return it->second;
    assert(n->kind() == NodeKind::get_attr && "copy_stage: a node read before its stage copied it");
    Node* a = g->get_attr(n->target());
    if (const at::Tensor* t = from.attr(n->target())) g->set_attr(n->target(), *t);
    a->meta() = n->meta();
    map[n] = a;
    return a;
  };
  for (Node* n : nodes) {
    std::vector<Arg> args;
    std::vector<Kwarg> kwargs;
    for (const Arg& a : n->args()) args.push_back(a.map_nodes(remap));
    for (const Kwarg& kw : n->kwargs()) kwargs.emplace_back(kw.first, kw.second.map_nodes(remap));
    Node* c = g->call(*n->op(), std::move(args), std::move(kwargs), n->name());
    (void)g->rename(c, n->name());
    c->meta() = n->meta();
    map[n] = c;
  }
  std::vector<Arg> results;
  for (Node* n : outputs) results.emplace_back(remap(n));
  g->output(Arg::tuple(std::move(results)));
  return g;
}

std::unordered_set<const Node*> keep_input_sizes(Graph& g, int* folded) {
  // Size nodes computed from the graph inputs' sizes alone stay: each
  // stage that uses one gets a copy (and the inputs it reads), so every
  // stage compiles per size signature of its own inputs and the stages
  // serve every size. Other size nodes that depend on no data-dependent
  // size (a size of an intermediate): constants (their values hold for the
  // sizes the graph is compiled for; the cut is then redone per size).
  std::function<bool(const Node&)> over_inputs = [&](const Node& n) {
    if (!is_sym(n) || is_item(n)) return false;
    for (const Arg& a : n.args()) {
      if (!a.is_node()) continue;
      const Node& in = *a.node();
      if (n.op()->sym == SymOp::size ? in.kind() != NodeKind::placeholder : !over_inputs(in)) return false;
    }
    return true;
  };
  std::unordered_set<const Node*> input_sizes;
  for (Node* n : g.nodes())
    if (is_sym(*n) && !depends_on_unbacked(*n) && n->meta().sym_value) {
      if (over_inputs(*n)) {
        input_sizes.insert(n);
        continue;
      }
      fold_sym_node(g, n, *n->meta().sym_value);
      ++*folded;
    }
  erase_unused_sym_nodes(g);
  for (auto it = input_sizes.begin(); it != input_sizes.end();)  // erased ones
    it = g.contains(*it) ? std::next(it) : input_sizes.erase(it);
  return input_sizes;
}

// A stage's nodes with the size nodes over input sizes they read (and those read), in graph order.
std::vector<Node*> with_input_sizes(const Graph& g, const std::vector<Node*>& nodes,
                                    const std::unordered_set<const Node*>& input_sizes) {
  std::unordered_set<const Node*> want;
  std::vector<const Node*> work;
  for (Node* n : nodes)
    for (Node* in : n->inputs()) work.push_back(in);
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    if (!input_sizes.count(n) || !want.insert(n).second) continue;
    for (Node* in : n->inputs()) work.push_back(in);
  }
  if (want.empty()) return nodes;
  std::unordered_set<const Node*> in_stage(nodes.begin(), nodes.end());
  std::vector<Node*> out_nodes;
  for (Node* n : g.nodes())
    if (in_stage.count(n) || want.count(n)) out_nodes.push_back(n);
  return out_nodes;
}

// The graph's results, flattened from its output's nested lists; false when
// it returns something that is not a node (a constant).
bool flat_results(const Arg& a, std::vector<Node*>* results) {
  if (a.is_node()) return results->push_back(a.node()), true;
  if (!a.is_list()) return false;
  for (const Arg& item : a.items())
    if (!flat_results(item, results)) return false;
  return true;
}

// Whether `n` draws random numbers. A random op after one that runs after
// the middle runs after it too: the head runs before the middle and the
// tail, so a draw that depends on no data-dependent size would otherwise
// come before an earlier draw of the tail (`m = x[x > 0]; torch.rand_like(m),
// torch.rand(2)`: rand(2) drew eager's first numbers). Draws keep eager's
// order and values.
bool draws_random(const Node* n) {
  return n->kind() == NodeKind::call_function && n->op() && !n->op()->is_getitem && n->op()->traits.random;
}

}  // namespace

Expected<UnbackedStages> split_at_unbacked(const Graph& original) {
  if (!original.autograd_function_names().empty())
    return Error{"the graph has a custom autograd.Function's backward body"};
  const GraphEffects effects = effects_of(original);
  if (effects.writes_inputs || effects.writes_attrs || effects.changes_metadata)
    return Error{"the graph writes its inputs or attributes"};
  std::shared_ptr<Graph> g = original.clone();
  UnbackedStages out;
  const std::unordered_set<const Node*> input_sizes = keep_input_sizes(*g, &out.folded_sizes);

  std::unordered_map<const Node*, Where> where;
  std::unordered_map<const Node*, bool> depends;
  std::vector<Node*> head, middle, tail, placeholders;
  const Node* first = nullptr;
  // Memory written after the first data-dependent op: the write and every
  // later read of that memory stay after the middle (in the tail), which
  // may read it as it was before (`v = x[x > 0]; x.zero_()`: fuzz seed
  // 9963638, the head zeroed x before the middle's index read it).
  std::unordered_set<int64_t> written_late;
  bool random_late = false;  // a draw in the tail: later ones go there too (draws_random)
  auto storages = [](const Node* x, auto&& fn) {
    for (const TensorMeta& m : x->meta().fake)
      if (m.storage_id >= 0) fn(m.storage_id);
  };
  for (Node* n : g->nodes()) {
    bool dep = n->meta().unbacked;
    for (Node* in : n->inputs()) dep = dep || depends[in];
    if (first && n->kind() == NodeKind::call_function && !is_sym(*n)) {
      for (Node* in : n->inputs()) storages(in, [&](int64_t id) { dep = dep || written_late.count(id) != 0; });
      if (n->op()->traits.mutates) {
        dep = true;
        for (Node* in : n->inputs()) storages(in, [&](int64_t id) { written_late.insert(id); });
      }
    }
    if (random_late && draws_random(n)) dep = true;
    depends[n] = dep;
    if (input_sizes.count(n)) continue;  // in the stages that use it (with_input_sizes)
    switch (n->kind()) {
      case NodeKind::placeholder:
        where[n] = Where::input;
        placeholders.push_back(n);
        continue;
      case NodeKind::get_attr:
        where[n] = Where::attr;
        continue;
      case NodeKind::output:
        continue;
      case NodeKind::call_function:
        break;
    }
    if (n->meta().unbacked && !first) first = n;
    Where w = Where::tail;
    if (!dep) {
      w = Where::head;
    } else if (n->meta().unbacked && !is_item(*n)) {
      bool frontier = true;
      for (Node* in : n->inputs()) frontier = frontier && where[in] != Where::middle && where[in] != Where::tail;
      if (frontier) w = Where::middle;
    } else if (n->op()->is_getitem && n->inputs().size() == 1 && where[n->inputs()[0]] == Where::middle) {
      w = Where::middle;
    }
    where[n] = w;
    random_late = random_late || (w != Where::head && draws_random(n));
    (w == Where::head ? head : w == Where::middle ? middle : tail).push_back(n);
  }
  if (!first) return Error{"the graph has no data-dependent op"};
  out.source = describe_unbacked(*first);
  Node* output = g->output_node();
  if (!output || output->args().size() != 1) return Error{"the graph has no single output"};
  std::vector<Node*> results;
  if (!flat_results(output->args()[0], &results)) return Error{"the graph returns a constant"};

  // Values crossing a boundary must be single tensors.
  auto later_users = [&](Node* n, Where stage) {
    std::vector<Node*> users;
    for (Node* u : n->users())
      if (u->kind() != NodeKind::output && where[u] != stage) users.push_back(u);
    return users;
  };
  std::unordered_map<const Node*, int> slot;
  for (Node* p : placeholders) slot[p] = out.slots++;
  auto slot_of = [&](Node* n) {
    auto it = slot.find(n);
    if (it != slot.end()) return it->second;
    return slot[n] = out.slots++;
  };
  auto stage_outputs = [&](const std::vector<Node*>& nodes, Where stage, std::vector<Node*>* outs) -> Status {
    std::unordered_set<const Node*> returned(results.begin(), results.end());
    for (Node* n : nodes) {
      const bool needed = !later_users(n, stage).empty() || returned.count(n);
      if (!needed) continue;
      if (!n->meta().tensor() || is_sym(*n))
        return Error{n->name() + " (" + n->target() + ") crosses a stage boundary and is not one tensor"};
      outs->push_back(n);
    }
    return ok_status();
  };
  std::vector<Node*> head_out, middle_out, tail_out;
  if (Status s = stage_outputs(head, Where::head, &head_out); !s.ok()) return s.error();
  if (Status s = stage_outputs(middle, Where::middle, &middle_out); !s.ok()) return s.error();
  for (Node* r : results) {
    if (!r->meta().tensor() || is_sym(*r)) return Error{"the graph returns " + r->name() + ", not one tensor"};
    if (where[r] == Where::tail && std::find(tail_out.begin(), tail_out.end(), r) == tail_out.end())
      tail_out.push_back(r);
  }
  auto fill = [&](UnbackedStage& stage, const std::vector<Node*>& stage_nodes, const std::vector<Node*>& outs,
                  const std::vector<Node*>* given) {
    if (stage_nodes.empty() && outs.empty()) return;
    const std::vector<Node*> nodes = with_input_sizes(*g, stage_nodes, input_sizes);
    std::vector<Node*> inputs;
    stage.graph = copy_stage(*g, nodes, outs, given, &inputs);
    for (Node* in : inputs) stage.inputs.push_back(slot_of(in));
    for (Node* o : outs) stage.outputs.push_back(slot_of(o));
  };
  if (!head_out.empty()) fill(out.head, head, head_out, &placeholders);
  fill(out.middle, middle, middle_out, nullptr);
  fill(out.tail, tail, tail_out, nullptr);
  for (Node* r : results) out.results.push_back(slot_of(r));
  return out;
}

std::vector<InputItem> input_items(const Graph& graph) {
  std::vector<InputItem> out;
  std::vector<Node*> placeholders = graph.placeholders();
  for (Node* n : graph.nodes()) {
    if (!is_item(*n) || n->args().empty() || !n->args()[0].is_node()) continue;
    auto it = std::find(placeholders.begin(), placeholders.end(), n->args()[0].node());
    if (it != placeholders.end()) out.push_back({n, static_cast<int>(it - placeholders.begin())});
  }
  return out;
}

std::shared_ptr<Graph> items_as_input_sizes(const Graph& graph) {
  std::shared_ptr<Graph> g = graph.clone();
  const std::vector<InputItem> items = input_items(*g);
  if (items.empty()) return nullptr;
  Node* first_call = nullptr;
  for (Node* n : g->nodes())
    if (n->kind() != NodeKind::placeholder) {
      first_call = n;
      break;
    }
  Node* saved = g->insert_point();
  std::vector<Node*> carriers;
  for (size_t i = 0; i < items.size(); ++i) {
    g->set_insert_point(first_call);
    carriers.push_back(g->placeholder("item_size", TensorMeta::contiguous({0, 0}, c10::kFloat)));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    Node* item = items[i].item;
    g->set_insert_point(item);
    Node* size = g->call(OpRegistry::instance().sym(SymOp::size), {Arg(carriers[i]), Arg(int64_t{0})}, {}, "item_size");
    size->meta() = item->meta();
    size->meta().unbacked = false;
    item->replace_all_uses_with(size);
    g->erase(item);
  }
  g->set_insert_point(saved);
  return g;
}

void bind_item(Graph& graph, Node* item, int64_t value) {
  assert(is_item(*item) && "bind_item: not a sym_item");
  fold_sym_node(graph, item, value);
}

}  // namespace tj::graph
