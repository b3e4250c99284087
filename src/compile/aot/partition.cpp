// Joint graph partition with a min-cut choice of what to save; see partition.h.
#include "compile/aot/partition.h"

#include <unordered_map>
#include <unordered_set>

#include <c10/core/ScalarType.h>

#include <ATen/ops/empty_strided.h>

#include "compile/aot/min_cut.h"
#include "graph/interpreter.h"
#include "graph/op_registry.h"
#include "graph/passes/dce.h"

namespace tj::graph::aot {

namespace {

using NodeSet = std::unordered_set<const Node*>;

NodeSet ancestors(const std::vector<const Node*>& roots) {
  NodeSet seen;
  std::vector<const Node*> todo(roots.begin(), roots.end());
  while (!todo.empty()) {
    const Node* n = todo.back();
    todo.pop_back();
    if (!seen.insert(n).second) continue;
    for (Node* in : n->inputs()) todo.push_back(in);
  }
  return seen;
}

bool cheap(const Node& n) {
  if (n.kind() != NodeKind::call_function || !n.op() || n.op()->is_getitem) return false;
  const OpTraits& t = n.op()->traits;
  return (t.pointwise || t.view) && !t.random && !t.mutates;
}

struct Copier {
  const Graph& src;
  Graph& dst;
  std::unordered_map<const Node*, Node*> map;

  Arg arg(const Arg& a) const {
    return a.map_nodes([&](Node* n) { return map.at(n); });
  }

  Node* copy(const Node* n) {
    Node* out = nullptr;
    if (n->kind() == NodeKind::get_attr) {
      if (!dst.attr(n->target())) dst.set_attr(n->target(), *src.attr(n->target()));
      out = dst.get_attr(n->target());
    } else {
      std::vector<Arg> args;
      for (const Arg& a : n->args()) args.push_back(arg(a));
      std::vector<Kwarg> kwargs;
      for (const Kwarg& kw : n->kwargs()) kwargs.emplace_back(kw.first, arg(kw.second));
      out = dst.call(*n->op(), std::move(args), std::move(kwargs), n->name());
    }
    out->meta() = n->meta();
    map[n] = out;
    return out;
  }
};

// The min-cut choice (partition.h): `saved` holds the forward values the
// backward reads; it becomes the values to save, and the nodes to recompute
// in the backward are returned. Every forward ancestor of a value the
// backward reads is a pair of vertices in -> out: cutting in -> out saves
// the value (twice its bytes, plus one unless the backward reads it itself:
// on a tie the value the backward reads is saved); cutting source -> in
// recomputes it (1 for a cheap op: the fewest recomputed nodes on a tie;
// infinite otherwise: placeholders, matmuls, convolutions, reductions,
// random and mutating ops are never recomputed); an input's out -> a
// reader's in is infinite (a recomputed node's inputs are saved or
// recomputed), and the values the backward reads go to the sink.
NodeSet choose_recompute(NodeSet& saved, const NodeSet& unsaveable) {
  std::vector<const Node*> region;
  for (const Node* n : ancestors(std::vector<const Node*>(saved.begin(), saved.end())))
    if (n->kind() != NodeKind::get_attr) region.push_back(n);
  std::unordered_map<const Node*, int> index;
  for (const Node* n : region) index.emplace(n, static_cast<int>(index.size()));
  const int source = 0, sink = 2 * static_cast<int>(region.size()) + 1;
  auto in = [&](const Node* n) { return 2 * index.at(n) + 1; };
  auto out = [&](const Node* n) { return 2 * index.at(n) + 2; };
  MinCut cut(sink + 1);
  for (const Node* n : region) {
    const bool read = saved.count(n) > 0;
    cut.add_edge(in(n), out(n), !read && unsaveable.count(n) ? MinCut::infinite : 2 * node_bytes(*n) + (read ? 0 : 1));
    cut.add_edge(source, in(n), cheap(*n) ? 1 : MinCut::infinite);
    if (read) cut.add_edge(out(n), sink, MinCut::infinite);
    for (const Node* i : n->inputs())
      if (index.count(i)) cut.add_edge(out(i), in(n), MinCut::infinite);
  }
  cut.solve(source, sink);
  NodeSet recompute;
  saved.clear();
  for (const Node* n : region) {
    if (!cut.source_side(in(n)))
      recompute.insert(n);
    else if (!cut.source_side(out(n)))
      saved.insert(n);
  }
  return recompute;
}

}  // namespace

int64_t node_bytes(const Node& node) {
  int64_t total = 0;
  for (const TensorMeta& m : node.meta().fake) {
    if (!m.defined) continue;
    int64_t numel = 1;
    for (int64_t s : m.sizes) numel *= s;
    total += numel * static_cast<int64_t>(c10::elementSize(m.dtype));
  }
  return total;
}

Expected<Partition> partition_joint(const Graph& joint, int num_primals, int num_tangents, int num_forward_outputs,
                                   bool recompute_cheap, const std::vector<bool>& versioned_primals) {
  std::vector<Node*> nodes = joint.nodes();
  std::vector<Node*> phs = joint.placeholders();
  Node* out = joint.output_node();
  if (static_cast<int>(phs.size()) != num_primals + num_tangents || !out || !out->args().at(0).is_list())
    return Error{"partition: the joint graph does not have the expected placeholders and outputs"};
  const std::vector<Arg>& items = out->args()[0].items();
  if (static_cast<int>(items.size()) < num_forward_outputs) return Error{"partition: too few joint outputs"};

  std::unordered_map<const Node*, size_t> order;
  for (size_t i = 0; i < nodes.size(); ++i) order[nodes[i]] = i;

  NodeSet backward;  // reachable from a tangent
  for (int i = num_primals; i < num_primals + num_tangents; ++i) backward.insert(phs[i]);
  for (Node* n : nodes) {
    if (n->kind() == NodeKind::output) continue;
    for (Node* in : n->inputs())
      if (backward.count(in)) {
        backward.insert(n);
        break;
      }
  }
  std::vector<const Node*> fw_roots, bw_roots;
  for (size_t i = 0; i < items.size(); ++i)
    items[i].for_each_node([&](Node* n) { (static_cast<int>(i) < num_forward_outputs ? fw_roots : bw_roots).push_back(n); });
  for (const Node* r : fw_roots)
    if (backward.count(r)) return Error{"partition: a forward output depends on a tangent"};
  NodeSet bw_needed = ancestors(bw_roots);

  // Saved: forward values (not constants) read by backward nodes.
  NodeSet saved;
  for (const Node* n : bw_needed) {
    if (!backward.count(n)) continue;
    for (Node* in : n->inputs())
      if (!backward.count(in) && in->kind() != NodeKind::get_attr) saved.insert(in);
  }
  Partition p;
  for (const Node* s : saved) p.saved_bytes_naive += node_bytes(*s);

  const NodeSet saved_naive = saved;
  NodeSet written;  // primals written in place: saved only where the backward reads them itself
  for (size_t i = 0; i < versioned_primals.size() && i < phs.size() && static_cast<int>(i) < num_primals; ++i)
    if (versioned_primals[i]) written.insert(phs[i]);
  NodeSet recompute = choose_recompute(saved, written);
  for (const Node* s : saved) p.saved_bytes_recomputing += node_bytes(*s);
  if (!recompute_cheap) {
    saved = saved_naive;
    recompute.clear();
  }
  std::vector<const Node*> saved_list(saved.begin(), saved.end());
  std::sort(saved_list.begin(), saved_list.end(), [&](const Node* a, const Node* b) { return order[a] < order[b]; });
  p.num_saved = static_cast<int>(saved_list.size());
  p.num_recomputed = static_cast<int>(recompute.size());
  for (const Node* s : saved_list) p.saved_bytes += node_bytes(*s);

  // Forward: primals -> forward outputs..., saved...
  p.forward = std::make_unique<Graph>();
  {
    std::vector<const Node*> roots = fw_roots;
    roots.insert(roots.end(), saved_list.begin(), saved_list.end());
    NodeSet keep = ancestors(roots);
    Copier c{joint, *p.forward, {}};
    for (int i = 0; i < num_primals; ++i) c.map[phs[i]] = p.forward->placeholder(phs[i]->name(), *phs[i]->meta().tensor());
    for (Node* n : nodes)
      if (n->kind() != NodeKind::placeholder && n->kind() != NodeKind::output && keep.count(n)) c.copy(n);
    std::vector<Arg> outs;
    for (int i = 0; i < num_forward_outputs; ++i) outs.push_back(c.arg(items[i]));
    for (const Node* s : saved_list) outs.emplace_back(c.map.at(s));
    p.forward->output(Arg::tuple(std::move(outs)));
  }
  // Backward: saved..., tangents... -> gradients...
  p.backward = std::make_unique<Graph>();
  {
    Copier c{joint, *p.backward, {}};
    for (const Node* s : saved_list) {
      Node* ph = p.backward->placeholder(s->name());
      ph->meta() = s->meta();
      c.map[s] = ph;
    }
    for (int i = num_primals; i < num_primals + num_tangents; ++i)
      c.map[phs[i]] = p.backward->placeholder(phs[i]->name(), *phs[i]->meta().tensor());
    for (Node* n : nodes) {
      if (n->kind() == NodeKind::placeholder || n->kind() == NodeKind::output || c.map.count(n)) continue;
      bool in_backward = (backward.count(n) && bw_needed.count(n)) || recompute.count(n);
      bool constant = n->kind() == NodeKind::get_attr && bw_needed.count(n);
      if (in_backward || constant) c.copy(n);
    }
    std::vector<Arg> outs;
    for (size_t i = num_forward_outputs; i < items.size(); ++i) outs.push_back(c.arg(items[i]));
    p.backward->output(Arg::tuple(std::move(outs)));
  }
  return p;
}

Expected<AbsentTangentGraph> without_absent_tangents(const Graph& backward, const std::vector<bool>& absent) {
  AbsentTangentGraph r;
  r.graph = backward.clone();
  Graph& g = *r.graph;
  std::unordered_set<const Node*> derived, gone;  // reads a tangent; reads tangents only through absent ones
  Node* first_op = nullptr;
  for (Node* n : g.nodes()) {
    if (n->kind() != NodeKind::placeholder) {
      first_op = n;
      break;
    }
    const std::string& name = n->target();
    if (name.rfind("tangents_", 0) != 0) continue;
    size_t k = std::stoul(name.substr(9)) - 1;
    if (k >= absent.size()) return Error{"backward: tangent " + name + " out of range"};
    derived.insert(n);
    if (absent[k]) gone.insert(n);
  }
  std::unordered_map<const Node*, Node*> zero_of;
  auto zeros_for = [&](Node* value) -> Expected<Node*> {
    if (auto it = zero_of.find(value); it != zero_of.end()) return it->second;
    const TensorMeta* m = value->meta().tensor();
    if (!m) return Error{"backward: an absent gradient " + value->name() + " is not one tensor"};
    g.set_insert_point(first_op);
    Node* ph = g.placeholder(g.unique_name("absent_zeros"), *m);
    g.set_insert_point(nullptr);
    r.zeros.push_back(*m);
    zero_of[value] = ph;
    return ph;
  };
  for (Node* n : g.nodes()) {
    if (n->kind() == NodeKind::placeholder || zero_of.count(n) || n->kind() == NodeKind::get_attr) continue;
    std::vector<Node*> ins = n->inputs();
    bool reads_derived = false, reads_present = false;
    for (Node* in : ins)
      if (derived.count(in)) {
        reads_derived = true;
        reads_present |= !gone.count(in);
      }
    if (n->kind() == NodeKind::output) {
      const Arg& out = n->args().at(0);
      const ArgList* items = std::get_if<ArgList>(&out.value());
      if (!items) return Error{"backward: the output is not a tuple"};
      std::vector<Arg> kept;
      for (const Arg& a : items->items) {
        Node* const* v = std::get_if<Node*>(&a.value());
        if (!v) return Error{"backward: an output is not a node"};
        bool is_gone = gone.count(*v) > 0;
        r.absent_outputs.push_back(is_gone);
        if (!is_gone) {
          kept.emplace_back(*v);
          continue;
        }
        auto z = zeros_for(*v);
        if (!z) return z.error();
        kept.emplace_back(*z);
      }
      n->set_args(std::vector<Arg>{Arg::tuple(std::move(kept))});
      continue;
    }
    if (!reads_derived) continue;
    derived.insert(n);
    if (!reads_present) {
      gone.insert(n);
      continue;
    }
    for (Node* in : ins)
      if (gone.count(in)) {
        auto z = zeros_for(in);
        if (!z) return z.error();
        n->replace_input(in, *z);
      }
  }
  eliminate_dead_code(g);
  return r;
}

Expected<std::vector<at::Tensor>> run_without_absent_tangents(const Graph& backward, const std::vector<bool>& absent,
                                                              const std::function<at::Tensor(size_t)>& input) {
  auto pruned = without_absent_tangents(backward, absent);
  if (!pruned) return pruned.error();
  std::vector<at::Tensor> inputs;
  std::vector<Node*> phs = pruned->graph->placeholders();
  for (size_t i = 0; i + pruned->zeros.size() < phs.size(); ++i)
    inputs.push_back(phs[i]->users().empty() ? at::Tensor() : input(i));
  for (const TensorMeta& m : pruned->zeros)
    inputs.push_back(at::empty_strided(m.sizes, m.strides, at::TensorOptions().dtype(m.dtype).device(m.device)).zero_());
  auto out = interpret_tensors(*pruned->graph, inputs);
  if (!out) return out.error();
  if (out->size() != pruned->absent_outputs.size()) return Error{"backward: another number of gradients"};
  for (size_t i = 0; i < out->size(); ++i)
    if (pruned->absent_outputs[i]) (*out)[i] = at::Tensor();
  return out;
}

}  // namespace tj::graph::aot
