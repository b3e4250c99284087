// The order the lowering visits a graph's nodes in (see lowering.h's
// fusion_order): placeholders and constants first, each pure scalar right
// after what it reads (an optimizer step's scalars), and every value written
// back into a graph input (a gradient accumulated into `.grad`) right after
// the last value it reads, so that what it reads dies early.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/effects.h"
#include "graph/op_registry.h"
#include "jit/fusion_group.h"
#include "jit/lowering.h"

namespace tj::jit {

using graph::Arg;
using graph::Node;
using graph::TensorMeta;

// See fusion_group.h.
bool is_view_op(const Node* n) {
  if (n->kind() != graph::NodeKind::call_function || !n->op()) return false;
  const std::string& name = n->op()->qualified_name();
  return name == "aten::view" || name == "aten::_unsafe_view" || name == "aten::reshape" ||
         name == "aten::unsqueeze" || name == "aten::squeeze" || name == "aten::squeeze.dim" ||
         name == "aten::squeeze.dims";
}

namespace {

// A pure node that makes one 0-d tensor: a scalar of an optimizer's step.
bool is_pure_scalar(const Node* n) {
  const TensorMeta* m = n->meta().tensor();
  return n->kind() == graph::NodeKind::call_function && n->op() && !n->op()->traits.side_effecting() && m &&
         m->sizes.empty();
}

// A value AOT writes back into a graph input (a gradient accumulated into
// `.grad`: `add(zero(grad), mm(...))`) is placed right after the last
// computed value it reads, with the views between (`t`, `detach`), instead
// of where the graph has it (after the whole backward): its kernel writes
// into the input (plan_donations) and the value it reads (a weight's
// gradient from `mm`) is released there, as eager's autograd accumulates
// each gradient into `.grad` as soon as it is made. Only pointwise nodes
// move, and views; none side-effecting, and none past an in-place op, so
// nothing observable changes.
void hoist_written_back_values(const graph::Graph& g, std::vector<const Node*>& order) {
  const Node* out = g.output_node();
  if (!out || out->args().empty() || !out->args()[0].is_list()) return;
  const std::vector<Arg>& results = out->args()[0].items();
  auto is_view = [](const Node* n) {
    return n->kind() == graph::NodeKind::call_function && n->op() && !n->op()->traits.side_effecting() &&
           (n->op()->traits.view || is_view_op(n) || n->op()->qualified_name() == "aten::detach");
  };
  for (const Node* p : g.placeholders()) {
    if (!p->meta().tags.donated_to_output) continue;
    const auto i = static_cast<size_t>(*p->meta().tags.donated_to_output);
    if (i >= results.size() || !results[i].is_node()) continue;
    const Node* value = results[i].node();
    if (value->kind() != graph::NodeKind::call_function || !value->op() || value->op()->traits.side_effecting() ||
        !pointwise_emitter(value))
      continue;
    std::unordered_map<const Node*, size_t> position;
    for (size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
    // the value and the views it reads through; `anchor`: the latest other node they read
    std::vector<const Node*> moving = {value};
    size_t anchor = 0;
    for (size_t k = 0; k < moving.size(); ++k)
      for (const Node* in : moving[k]->inputs()) {
        if (is_view(in) && in->users().size() == 1 && position.at(in) > anchor &&
            std::find(moving.begin(), moving.end(), in) == moving.end())
          moving.push_back(in);
        else
          anchor = std::max(anchor, position.at(in));
      }
    // a new value computed from the input's old one stays after a node that may raise on data (it is written
    // in place only after the last such node: sink_updates.h)
    for (size_t k = position.at(value); !p->users().empty() && k-- > anchor + 1;)
      if (order[k]->kind() == graph::NodeKind::call_function && graph::may_raise_on_data(*order[k])) {
        anchor = k;
        break;
      }
    // a view read by another node, or placed before the anchor, stays (then it is the anchor)
    std::vector<const Node*> kept;
    for (const Node* m : moving)
      if (position.at(m) > anchor) kept.push_back(m);
      else anchor = std::max(anchor, position.at(m));
    if (kept.size() != moving.size() || position.at(value) <= anchor + moving.size()) continue;
    // an in-place op between could write what the value reads: then it stays
    bool writes_between = false;
    for (size_t k = anchor + 1; k < position.at(value); ++k)
      writes_between = writes_between || (order[k]->op() && order[k]->op()->traits.mutates);
    if (writes_between) continue;
    std::sort(kept.begin(), kept.end(), [&](const Node* a, const Node* b) { return position.at(a) < position.at(b); });
    std::vector<const Node*> rest;
    rest.reserve(order.size());
    for (const Node* n : order)
      if (std::find(kept.begin(), kept.end(), n) == kept.end()) rest.push_back(n);
    rest.insert(rest.begin() + static_cast<long>(anchor) + 1, kept.begin(), kept.end());
    order = std::move(rest);
  }
}

}  // namespace

// See lowering.h.
std::vector<const Node*> fusion_order(const graph::Graph& g) {
  const std::vector<Node*> graph_nodes = g.nodes();  // a new vector per call
  std::vector<const Node*> nodes(graph_nodes.begin(), graph_nodes.end());
  std::unordered_map<const Node*, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i]] = i;
  std::vector<bool> emitted(nodes.size(), false);
  std::vector<const Node*> order;
  order.reserve(nodes.size());
  auto ready = [&](const Node* n) {
    for (const Node* in : n->inputs())
      if (!emitted[index.at(in)]) return false;
    return true;
  };
  // Emits node i, then, depth first, the scalars it unblocks (each user in
  // turn, checked when its turn comes). An explicit stack, not recursion: a
  // chain of 20,000 scalar ops is 20,000 levels deep.
  struct Frame {
    size_t node;
    size_t next_user;
  };
  std::vector<Frame> stack;
  auto emit = [&](size_t first) {
    emitted[first] = true;
    order.push_back(nodes[first]);
    stack.push_back({first, 0});
    while (!stack.empty()) {
      Frame& top = stack.back();
      const std::vector<Node*>& users = nodes[top.node]->users();
      if (top.next_user == users.size()) {
        stack.pop_back();
        continue;
      }
      const Node* user = users[top.next_user++];
      auto it = index.find(user);
      if (it == index.end() || emitted[it->second] || it->second <= top.node || !is_pure_scalar(user) || !ready(user))
        continue;
      emitted[it->second] = true;
      order.push_back(user);
      stack.push_back({it->second, 0});  // `top` is not used after this
    }
  };
  // the placeholders first and in order (they are the program's inputs),
  // and the constants
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i]->kind() == graph::NodeKind::placeholder || nodes[i]->kind() == graph::NodeKind::get_attr) {
      emitted[i] = true;
      order.push_back(nodes[i]);
    }
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!emitted[i] && is_pure_scalar(nodes[i]) && ready(nodes[i])) emit(i);
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!emitted[i]) emit(i);
  hoist_written_back_values(g, order);
  return order;
}

}  // namespace tj::jit
