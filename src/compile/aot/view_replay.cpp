// Output views replayed by their view ops; see view_replay.h.
#include "compile/aot/view_replay.h"

#include <functional>

#include "graph/interpreter.h"
#include "graph/op_registry.h"

namespace tj::graph::aot {

namespace {

// A view op without effects (or one item of a view op's sequence: unbind,
// split), reading the tensor it views as its first argument.
bool replayable_view(const Node* n) {
  if (n->kind() != NodeKind::call_function || !n->op() || n->args().empty() || !n->args()[0].is_node()) return false;
  const OpInfo* op = n->op();
  if (op->is_getitem) op = n->args()[0].node()->op();
  return op && !op->is_builtin() && op->traits.view && !op->traits.side_effecting();
}

bool mentions_node(const Arg& a) {
  bool any = false;
  a.for_each_node([&](Node*) { any = true; });
  return any;
}

}  // namespace

std::vector<const Node*> flat_output_nodes(const Graph& graph) {
  std::vector<const Node*> out;
  const Node* o = graph.output_node();
  if (!o || o->args().size() != 1) return out;
  std::function<void(const Arg&)> walk = [&](const Arg& a) {
    if (a.is_list()) {
      for (const Arg& item : a.items()) walk(item);
      return;
    }
    if (!a.is_node()) return;
    const Node* n = a.node();
    if (n->meta().fake_is_sequence) {
      out.insert(out.end(), n->meta().fake.size(), nullptr);
      return;
    }
    // a tensor, or not described (a parsed graph): the sizes are checked by the caller
    if (n->meta().tensor() || (n->meta().fake.empty() && !n->meta().sym_value)) out.push_back(n);
  };
  walk(o->args()[0]);
  return out;
}

std::unique_ptr<Graph> view_chain_from(const Node* input, const Node* out) {
  std::vector<const Node*> chain;  // from `out` back to `input`
  for (const Node* n = out; n != input; n = n->args()[0].node()) {
    if (!replayable_view(n) || chain.size() > 10000) return nullptr;
    // Another argument may be the input itself (`x.view_as(x)`: eager's
    // view, whose backward keeps the gradient's layout, where as_strided's
    // lays it out as x); it stands for the replay's placeholder.
    for (size_t i = 1; i < n->args().size(); ++i)
      if (mentions_node(n->args()[i]) && !(n->args()[i].is_node() && n->args()[i].node() == input)) return nullptr;
    for (const Kwarg& kw : n->kwargs())
      if (mentions_node(kw.second)) return nullptr;
    chain.push_back(n);
  }
  auto g = std::make_unique<Graph>();
  Node* const placeholder = g->placeholder(
      input->name(), input->meta().tensor() ? std::optional<TensorMeta>(*input->meta().tensor()) : std::nullopt);
  Node* prev = placeholder;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const Node* n = *it;
    std::vector<Arg> args = n->args();
    for (size_t i = 1; i < args.size(); ++i)
      if (args[i].is_node() && args[i].node() == input) args[i] = Arg(placeholder);
    args[0] = Arg(prev);
    Node* copy = g->call(*n->op(), std::move(args), n->kwargs(), n->name());
    copy->meta() = n->meta();
    prev = copy;
  }
  g->output(Arg(prev));
  return g;
}

const Node* view_chain_start(const Node* out) {
  const Node* n = out;
  for (size_t steps = 0; n && replayable_view(n) && steps < 10000; ++steps) n = n->args()[0].node();
  return n;
}

at::Tensor replay_view(const Graph& replay, const at::Tensor& from, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                       int64_t offset) {
  at::Tensor t = interpret_or_throw(replay, {from}).at(0);
  if (!t.defined() || t.sizes() != sizes || t.strides() != strides ||
      t.storage_offset() != offset || t.scalar_type() != from.scalar_type() || !t.storage().is_alias_of(from.storage()))
    return at::Tensor();
  return t;
}

}  // namespace tj::graph::aot
