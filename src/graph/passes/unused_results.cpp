// Unused results kept as extra outputs; see unused_results.h.
#include "graph/passes/unused_results.h"

#include <set>
#include <string>
#include <unordered_map>

#include "graph/lint.h"
#include "graph/meta_infer.h"
#include "graph/op_registry.h"

namespace tj::graph {

namespace {

// The op producing the tuple a getitem node reads, or null.
const OpInfo* producer(const Node* getitem) {
  const std::vector<Node*> in = getitem->inputs();
  return in.empty() ? nullptr : in.front()->op();
}

bool unused_view(const Node* n);

// Read by nothing but views that are read by nothing (`v[0]` left unused):
// dead code for a functional graph, as if unread.
bool only_unused_views_read(const Node* n) {
  for (const Node* user : n->users())
    if (!unused_view(user)) return false;
  return true;
}

// A view op (one without effects).
bool view_op(const Node* n) {
  return n->kind() == NodeKind::call_function && n->op() && n->op()->traits.view && !n->op()->traits.side_effecting();
}

// A view read by nothing but views read by nothing (`v.reshape(-1, 7)`
// left unused): no alias anyone sees.
bool unused_view(const Node* n) { return view_op(n) && only_unused_views_read(n); }

bool may_fail_unseen(const Node* n) {
  if (n->kind() != NodeKind::call_function || !n->op() || !only_unused_views_read(n)) return false;
  if (!n->meta().tensor()) return false;  // not a single tensor (a tuple, a scalar, None)
  const OpInfo* op = n->op();
  if (op->is_getitem) op = producer(n);  // one result of a multi-result op (max.dim, sort)
  // A custom Function's outputs were computed (and checked) by the forward's ops.
  return op && !op->is_getitem && !op->is_autograd_function && !op->traits.view && !op->traits.side_effecting();
}

bool is_inplace(const Node* n) {
  return n->kind() == NodeKind::call_function && n->op() && n->op()->traits.inplace && !n->args().empty() &&
         n->args()[0].is_node();
}

// A view of the tensor its first argument is.
bool is_view(const Node* n) { return view_op(n) && !n->args().empty() && n->args()[0].is_node(); }

// An in-place op on an intermediate nobody reads afterwards (`v.relu_()` as
// the last use of v, or followed only by views nobody reads), directly or
// through views of it (`v[0] = x`): its functional form is a new value
// nobody uses, so a functional graph drops it, and with it the failure
// eager raises (relu_ of a bool tensor), or that of the op computing the
// intermediate (`v = x // 0; v.add_(1)`). Only when nothing reads the
// intermediate or any alias of it after n.
bool last_write_of_intermediate(const Node* n, const std::unordered_map<const Node*, size_t>& pos) {
  if (!is_inplace(n) || !n->meta().tensor() || !only_unused_views_read(n)) return false;
  const Node* root = n->args()[0].node();
  while (is_inplace(root) || is_view(root)) root = root->args()[0].node();
  if (root->kind() != NodeKind::call_function || !root->op() || root->op()->is_getitem || root->op()->traits.view ||
      root->op()->traits.side_effecting())
    return false;
  // The root, its views and the results of in-place ops on them: read after
  // n, or read by another view's reader?
  std::vector<const Node*> aliases{root};
  for (size_t i = 0; i < aliases.size(); ++i)
    for (const Node* user : aliases[i]->users()) {
      if (unused_view(user)) continue;
      if (user->kind() == NodeKind::output || pos.at(user) > pos.at(n)) return false;
      if (!user->op() || user->op()->is_getitem) return false;
      const bool aliasing = is_view(user) || is_inplace(user);
      if (aliasing && user->args()[0].node() == aliases[i])
        aliases.push_back(user);
      else if (user->op()->traits.view)
        return false;
    }
  return true;
}

// An in-place op that gives its tensor other sizes and strides over the
// same elements (`v.unsqueeze_(0)`).
bool restrides_in_place(const Node* n) {
  static const std::set<std::string> names = {"t_", "transpose_", "swapdims_", "swapaxes_", "squeeze_", "unsqueeze_"};
  return is_inplace(n) && names.count(n->op()->base_name()) > 0;
}

// Every reader of `n` overwrites it whole (copy_ into it), or restrides it
// in place and every reader of that overwrites it whole.
bool overwritten_by_every_reader(const Node* n) {
  if (n->users().empty()) return false;
  for (const Node* user : n->users()) {
    if (!user->op() || user->args().empty() || !user->args()[0].is_node() || user->args()[0].node() != n)
      return false;
    if (user->op()->base_name() == "copy_") continue;
    if (!restrides_in_place(user) || !overwritten_by_every_reader(user)) return false;
  }
  return true;
}

// A result that reads data (not a factory) and is then only overwritten
// whole (`v[...] = x`, also after `v.unsqueeze_(0)`): LibTorch's functional
// copy_ of an equal-shaped tensor is its source, so nothing in the
// functional graph reads it.
bool only_overwritten(const Node* n) {
  if (n->kind() != NodeKind::call_function || !n->op() || !n->meta().tensor()) return false;
  const OpInfo* op = n->op();
  if (op->is_getitem || op->traits.view || op->traits.side_effecting() || n->inputs().empty()) return false;
  return overwritten_by_every_reader(n);
}

// A clone of `n` read before anything overwrites it, to keep as an output.
Node* clone_before_overwrite(Graph& graph, Node* n) {
  auto clone = OpRegistry::instance().get("aten::clone");
  if (!clone.ok()) return nullptr;
  graph.set_insert_point(n->users().front());
  Node* c = graph.call(**clone, {n});
  graph.set_insert_point(nullptr);
  c->meta().loc = n->meta().loc;
  c->meta().tags = n->meta().tags;
  if (infer_meta(graph, *c).ok()) return c;
  graph.erase(c);
  return nullptr;
}

}  // namespace

int expose_unused_results(Graph& graph) {
  Node* out = graph.output_node();
  if (!out || out->args().size() != 1) return 0;
  std::vector<Node*> nodes = graph.nodes();
  std::unordered_map<const Node*, size_t> pos;
  for (size_t i = 0; i < nodes.size(); ++i) pos[nodes[i]] = i;
  std::vector<Arg> extra;
  for (Node* n : nodes) {
    if (may_fail_unseen(n) || last_write_of_intermediate(n, pos)) extra.emplace_back(n);
    if (only_overwritten(n))
      if (Node* c = clone_before_overwrite(graph, n)) extra.emplace_back(c);
  }
  if (extra.empty()) return 0;
  const Arg& result = out->args()[0];
  if (!result.is_list() && !result.is_node()) return 0;
  std::vector<Arg> items = result.is_list() ? result.items() : std::vector<Arg>{result};
  int added = static_cast<int>(extra.size());
  items.insert(items.end(), extra.begin(), extra.end());
  out->set_args({Arg::tuple(std::move(items))});
  lint_in_debug(graph, "expose_unused_results");
  return added;
}

}  // namespace tj::graph
