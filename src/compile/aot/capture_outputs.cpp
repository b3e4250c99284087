// AOT capture, its second half (see capture_driver.h): after the graph ran
// on functional proxies, classifies each input (data or metadata mutated,
// version bumps, synthetic bases) and each output (fresh, an input, a view
// of an input, output or intermediate base, laid out as eager's), and
// picks the differentiable outputs.
#include "compile/aot/capture_driver.h"
#include "compile/aot/engine_sums.h"

namespace tj::graph::aot::capture_impl {

// Fills input and output metadata; returns the forward output nodes.
Expected<std::vector<Node*>> Driver::classify(const std::vector<at::Tensor>& outs, std::vector<at::Tensor>& diff_outs) {
  Classified c;
  if (auto st = classify_inputs(c.mutated_nodes); !st) return st.error();
  copy_overwritten_values(c.mutated_nodes);
  if (auto st = refuse_shared_mutated_inputs(); !st) return st.error();
  std::vector<const c10::TensorImpl*> out_impls;
  for (size_t k = 0; k < outs.size(); ++k)
    if (auto st = classify_output(k, outs, out_impls, c); !st) return st.error();
  if (auto st = resolve_intermediate_views(outs, c); !st) return st.error();
  note_creation_meta(outs.size());
  if (options.joint) {
    pick_differentiable(outs, c, diff_outs);
    give_views_tangents(outs, c, diff_outs);
    pick_cuts(outs, c, diff_outs);
  }
  cap.num_fresh = static_cast<int>(c.fresh_nodes.size());
  cap.num_bases = static_cast<int>(c.base_nodes.size());
  std::vector<Node*> result = c.mutated_nodes;
  result.insert(result.end(), c.fresh_nodes.begin(), c.fresh_nodes.end());
  result.insert(result.end(), c.base_nodes.begin(), c.base_nodes.end());
  return result;
}

// Each input: its version bumps, whether its data or metadata was mutated
// (and eager's geometry after); a mutated one's new value node.
Status Driver::classify_inputs(std::vector<Node*>& mutated_nodes) {
  for (size_t u = 0; u < funcs.size(); ++u) {
    InputInfo& info = cap.inputs[u];
    at::Tensor base = storage_base(funcs[u]);
    at::Tensor value = current_value(funcs[u]);
    info.version_bumps = static_cast<int64_t>(funcs[u].unsafeGetTensorImpl()->version_counter().current_version()) +
                         (bump_correction.count(u) ? bump_correction[u] : 0);
    info.data_mutated = node_of(base, "a mutated input") != placeholders[u];
    // The wrapper's value is its storage base unless view metadata was
    // applied to the input itself (t_, transpose_, as_strided_).
    info.meta_mutated = !value.is_same(base);
    if (info.meta_mutated) info.final_geometry = geometry(value, base.storage_offset());
    if (!info.synthetic_base) {
      // The geometry eager leaves (the functional value of `t_(); copy_(v)`
      // is laid out like `v`, and `transpose_(0, 0)` changes nothing).
      const at::Tensor& after = eager.inputs[info.position];
      const at::Tensor& before = examples[info.position];
      info.meta_mutated = after.sizes() != before.sizes() || after.strides() != before.strides() ||
                          after.storage_offset() != before.storage_offset();
      info.final_geometry = info.meta_mutated ? eager_geometry(after, before.storage_offset(), after.scalar_type())
                                              : Geometry{};
    }
    if ((info.data_mutated || info.meta_mutated) && info.requires_grad)
      return Error{"AOT: input " + placeholders[u]->name() + " requires grad and is mutated in place"};
    // Written with a value that requires grad, eager's input gets autograd
    // history; the wrapper's copy back gives it none.
    if (info.data_mutated && options.joint && funcs[u].requires_grad())
      return Error{"AOT: input " + placeholders[u]->name() + " is written with a value that requires grad"};
    if (info.data_mutated) {
      cap.mutated.push_back(static_cast<int>(u));
      mutated_nodes.push_back(node_of(base, "a mutated input"));
    }
  }
  return ok_status();
}

// A mutated input's new value that is another mutated input's old value
// (`a.copy_(b); b.fill_(3)`), or a view of it: the wrapper writes the
// inputs back one after another, so it would read `b` already written.
// The graph returns a copy made before any write instead.
void Driver::copy_overwritten_values(std::vector<Node*>& mutated_nodes) {
  for (size_t k = 0; k < mutated_nodes.size(); ++k) {
    const Node* root = alias_root(mutated_nodes[k]);
    const size_t u = static_cast<size_t>(cap.mutated[k]);
    for (size_t w = 0; w < funcs.size(); ++w)
      if (w != u && root == placeholders[w] && cap.inputs[w].data_mutated) {
        mutated_nodes[k] = node_of(at::clone(storage_base(funcs[u])), "a copied mutated input value");
        break;
      }
  }
}

// Mutated inputs that share memory with another input: capture again
// with their storages merged into synthetic bases.
Status Driver::refuse_shared_mutated_inputs() {
  for (size_t u = 0; u < funcs.size(); ++u) {
    if (!cap.inputs[u].data_mutated && !cap.inputs[u].meta_mutated) continue;
    const at::Tensor& a = examples[cap.inputs[u].position];
    for (size_t w = 0; w < funcs.size(); ++w) {
      const at::Tensor& b = examples[cap.inputs[w].position];
      if (w != u && a.has_storage() && b.has_storage() && a.storage().is_alias_of(b.storage()))
        to_merge.insert(a.storage().unsafeGetStorageImpl());
    }
  }
  if (!to_merge.empty()) return Error{"AOT: mutated inputs share memory with other inputs"};
  return ok_status();
}

// Output `k`: the input itself, another output, a view of an input, a
// fresh tensor, a view of another output, or a view of an intermediate
// (resolved by resolve_intermediate_views).
Status Driver::classify_output(size_t k, const std::vector<at::Tensor>& outs,
                               std::vector<const c10::TensorImpl*>& out_impls, Classified& c) {
  const at::Tensor& f = outs[k];
  OutputInfo info;
  out_impls.push_back(f.unsafeGetTensorImpl());
  int found = -1;
  for (size_t p = 0; p < pos_funcs.size() && found < 0; ++p)
    if (pos_funcs[p].is_same(f)) found = static_cast<int>(p);
  const at::Tensor& eager_out = eager.outputs[k];
  // The input itself here, a tensor of its own in eager (`b.add_(1);
  // b.contiguous()` of a non-contiguous b: the functional b is laid out
  // as its new value, so contiguous() returned it): a copy of its value.
  if (found >= 0 && !eager_out.is_same(eager.inputs[static_cast<size_t>(found)]) &&
      !shares_storage(eager_out, eager.inputs[static_cast<size_t>(found)]))
    return add_fresh(k, at::clone(current_value(f)), f, info, c.fresh_nodes, c.fresh_funcs, c.fresh_outputs);
  if (found >= 0 && eager_out.is_same(eager.inputs[static_cast<size_t>(found)])) {
    info.kind = OutputKind::input;
    info.source = found;
    cap.outputs.push_back(info);
    return ok_status();
  }
  found = -1;
  for (size_t j = 0; j < k && found < 0; ++j)
    if (out_impls[j] == f.unsafeGetTensorImpl()) found = static_cast<int>(j);
  if (found >= 0) {
    info.kind = OutputKind::same_as_output;
    info.source = found;
    cap.outputs.push_back(info);
    return ok_status();
  }
  at::Tensor value = current_value(f);
  for (size_t p = 0; p < pos_funcs.size() && found < 0; ++p)
    if (functional_storage(pos_funcs[p]) == functional_storage(f)) found = static_cast<int>(p);
  // Eager's tensor views an input written in the graph, the functional
  // one is a copy (`x0.copy_(v); x0.reshape(-1)`: the functional value of
  // x0 is laid out as the copy's result, where reshape cannot view; fuzz
  // seed 9953025): a view of the caller's input, made after its write.
  for (size_t p = 0; p < pos_funcs.size() && found < 0 && !f.requires_grad(); ++p)
    if (shares_storage(eager.inputs[p], eager_out) && cap.inputs[cap.unique_of[p]].data_mutated)
      found = static_cast<int>(p);
  if (found >= 0) return classify_view_of_input(k, outs.size(), found, f, eager_out, info);
  if (!f.is_view()) return classify_unviewed_output(k, f, value, eager_out, info, c);
  // A view here, a tensor of its own in eager (`v.flatten()` of a
  // transposed v: eager copies, the functional v is laid out so that
  // flatten views it; fuzz seed 9905338): a copy of its value, or the
  // caller's output shares memory with v's.
  bool alone = !eager_out.is_view();
  for (size_t j = 0; j < outs.size() && alone; ++j)
    alone = j == k || !shares_storage(eager.outputs[j], eager_out);
  for (size_t p = 0; p < eager.inputs.size() && alone; ++p) alone = !shares_storage(eager.inputs[p], eager_out);
  if (alone) return add_fresh(k, at::clone(value), f, info, c.fresh_nodes, c.fresh_funcs, c.fresh_outputs);
  info.kind = OutputKind::view_of_intermediate;  // resolved by resolve_intermediate_views
  info.source = -1;
  cap.outputs.push_back(info);
  return ok_status();
}

// Output `k` (functional tensor `f`, eager's `eager_out`) views the
// caller's input `found`.
Status Driver::classify_view_of_input(size_t k, size_t num_outputs, int found, const at::Tensor& f,
                                      const at::Tensor& eager_out, OutputInfo info) {
  // The geometry of eager's view on the caller's input (the functional
  // value of a view written in place is the functional op's result).
  const at::Tensor& eager_in = eager.inputs[static_cast<size_t>(found)];
  if (!eager_in.storage().is_alias_of(eager_out.storage()))
    return Error{"AOT: output " + std::to_string(k) + " views an input only in the functional graph"};
  info.kind = OutputKind::view_of_input;
  info.source = found;
  info.detached = options.joint && pos_funcs[static_cast<size_t>(found)].requires_grad() && !f.requires_grad();
  info.geometry = eager_geometry(eager_out, eager.offsets[static_cast<size_t>(found)], eager_in.scalar_type());
  if (auto st = check_dtype_view(info.geometry, eager_in); !st) return st.error();
  // A view that requires grad is made again by its view ops where it
  // can be (the input it views is not written: capture refuses that):
  // their backward is eager's, as_strided's is not. As_strided's
  // gradient comes out in the input's strides, eager's view backward
  // (`x[:]`'s slice_backward, `unsqueeze`'s squeeze of an expanded
  // gradient) in others, which AccumulateGrad keeps on size-1 dims when
  // it steals the gradient (fuzz seeds 9901388, 9903216); of an input
  // that overlaps itself, as_strided's backward spreads the gradient
  // over the overlapping elements, so there the replay is a must.
  if (options.joint && f.requires_grad() && !info.detached) {
    std::vector<const Node*> src_outs = flat_output_nodes(src);
    std::vector<Node*> phs = src.placeholders();
    if (src_outs.size() == num_outputs && src_outs[k]) {
      info.replay = view_chain_from(phs.at(static_cast<size_t>(found)), src_outs[k]);
      // From the nearest earlier output on the chain, as eager's views
      // chain (one view node, whose input buffer sums both gradients).
      for (size_t j = 0; info.replay && j < k && j < cap.outputs.size(); ++j) {
        const OutputInfo& earlier = cap.outputs[j];
        if (earlier.kind != OutputKind::view_of_input || earlier.source != found || !earlier.replay ||
            earlier.replay_from >= 0 || !src_outs[j] || src_outs[j] == src_outs[k])
          continue;
        auto rest = view_chain_from(src_outs[j], src_outs[k]);
        if (rest && rest->nodes().size() < info.replay->nodes().size()) {
          info.replay = std::move(rest);
          info.replay_from = static_cast<int>(j);
        }
      }
    }
    if (!info.replay && detail::may_overlap(examples[found]))
      return Error{"AOT: output " + std::to_string(k) +
                   " views an input that overlaps itself, not by view ops alone (its gradient would be spread)"};
    output_seqs.resize(k + 1, 0);
    output_seqs[k] = detail::handing_node(f, pos_funcs[static_cast<size_t>(found)]);
  }
  cap.outputs.push_back(info);
  return ok_status();
}

// Output `k`, not a view here: a view of an earlier output that is the
// same value, or a fresh output.
Status Driver::classify_unviewed_output(size_t k, const at::Tensor& f, at::Tensor value, const at::Tensor& eager_out,
                                        OutputInfo info, Classified& c) {
  int found = -1;
  Node* node = node_of(value, "an output");
  // Eager's tensor aliases an earlier output that is the same value
  // here (`detach()` of it, made before a write): a view of that one.
  for (size_t j = 0; j < c.fresh_nodes.size() && found < 0; ++j)
    if (c.fresh_nodes[j] == node && shares_storage(eager.outputs[c.fresh_outputs[j]], eager_out))
      found = static_cast<int>(c.fresh_outputs[j]);
  if (found >= 0) {
    if (options.joint) return Error{"AOT: an output aliases another without being its autograd view"};
    const at::Tensor& eager_base = eager.outputs[static_cast<size_t>(found)];
    info.kind = OutputKind::view_of_output;
    info.source = found;
    info.detached = !eager_out.is_view();
    info.geometry = eager_geometry(eager_out, eager_base.storage_offset(), eager_base.scalar_type());
    if (auto st = check_dtype_view(info.geometry, eager_base); !st) return st.error();
    cap.outputs.push_back(info);
    return ok_status();
  }
  if (!owns_its_value(node, eager_out, c.fresh_nodes, c.fresh_outputs)) value = at::clone(value);
  return add_fresh(k, value, f, info, c.fresh_nodes, c.fresh_funcs, c.fresh_outputs);
}

// Views of intermediates: of another (non-view) output, else of an extra base.
Status Driver::resolve_intermediate_views(const std::vector<at::Tensor>& outs, Classified& c) {
  for (size_t k = 0; k < outs.size(); ++k) {
    OutputInfo& info = cap.outputs[k];
    if (info.kind != OutputKind::view_of_intermediate) continue;
    const at::Tensor& f = outs[k];
    at::Tensor base_f(f._base());
    at::Tensor value = current_value(f);
    for (size_t j = 0; j < outs.size(); ++j)
      if (cap.outputs[j].kind == OutputKind::fresh && outs[j].is_same(base_f)) {
        info.kind = OutputKind::view_of_output;
        info.source = static_cast<int>(j);
      }
    // A view of a detached alias of the base (`v.detach().chunk(2)[1]`):
    // made from the base's detach(), requiring no grad (fuzz seed 9906833).
    // A view of an output that requires no grad itself (`v2 = ones * 3`
    // returned with `v2.T`) is its plain view, as eager's: an in-place op
    // on that output later rebases the view's history (fuzz seed 10001410).
    info.of_detached_base = options.joint && !f.requires_grad() &&
                            (info.kind != OutputKind::view_of_output || outs[info.source].requires_grad());
    at::Tensor base_value = current_value(base_f);
    // Eager's view on eager's base: the first tensor made on its storage.
    at::Tensor eager_base = eager.root_of(eager.outputs[k]);
    if (!eager_base.defined())
      return Error{"AOT: output " + std::to_string(k) + " views an intermediate only in the functional graph"};
    info.geometry = eager_geometry(eager.outputs[k], eager_base.storage_offset(), eager_base.scalar_type());
    if (auto st = check_dtype_view(info.geometry, eager_base); !st) return st.error();
    if (eager_base.storage_offset() != base_value.storage_offset() || eager_base.sizes() != base_value.sizes())
      return Error{"AOT: output " + std::to_string(k) + " views an intermediate laid out otherwise than eager's"};
    if (options.joint && f.requires_grad()) info.replay = intermediate_view_replay(k, info, eager_base, outs.size());
    if (info.kind == OutputKind::view_of_output) {
      if (!same_layout(eager_base.sizes(), eager_base.strides(), base_value))
        return Error{"AOT: output " + std::to_string(k) + " views an output laid out otherwise than eager's"};
      continue;
    }
    for (size_t b = 0; b < c.base_funcs.size(); ++b)
      if (c.base_funcs[b].is_same(base_f)) info.source = static_cast<int>(b);
    if (info.source < 0) {
      info.source = static_cast<int>(c.base_funcs.size());
      int slot = static_cast<int>(cap.mutated.size() + c.fresh_nodes.size() + c.base_nodes.size());
      Node* base_node = node_of(base_value, "an intermediate base");
      if (!owns_its_value(base_node, eager_base, c.fresh_nodes, c.fresh_outputs)) {
        base_value = at::clone(base_value);
        base_node = node_of(base_value, "a copied intermediate base");
      }
      if (auto st = note_layout(slot, base_value, eager_base); !st) return st.error();
      c.base_funcs.push_back(base_f);
      c.base_nodes.push_back(base_node);
    }
  }
  return ok_status();
}

// Replayed views of outputs and intermediates that require grad and that
// the differentiable outputs' ops read: a tangent of their own
// (OutputInfo::grad_base), after those of `diff_outs`. Eager's engine adds
// such a view's own gradient to its readers' contributions in the view
// node's input buffer, before the view's backward; a view whose gradient
// reached the backward node only through its base made the engine sum it
// with the base's own there, and the backward graph add the readers'
// contributions later, laid out otherwise (fuzz by hand: `v3 =
// clamp(x0, max=x1).t()` and `v3.rsqrt()` returned with the clamp, x1.grad
// (1, 1) for eager's (1, 4)). A view no op reads keeps its gradient on its
// base's (its view backward then passes the incoming gradient on, as
// eager's).
void Driver::give_views_tangents(const std::vector<at::Tensor>& outs, Classified& c,
                                 std::vector<at::Tensor>& diff_outs) {
  const size_t unused = std::min(outs.size(), static_cast<size_t>(std::max(options.undifferentiated_outputs, 0)));
  const size_t used = outs.size() - unused;
  const std::vector<at::Tensor> readers = diff_outs;
  for (size_t k = 0; k < used; ++k) {
    OutputInfo& info = cap.outputs[k];
    if ((info.kind != OutputKind::view_of_output && info.kind != OutputKind::view_of_intermediate) || !info.replay ||
        info.detached || info.of_detached_base || !outs[k].requires_grad() ||
        detail::contribution_counts(readers, {outs[k]}).at(0) == 0)
      continue;
    at::Tensor value = at::clone(current_value(outs[k]));
    info.grad_base = static_cast<int>(c.base_funcs.size());
    cap.differentiable.push_back(static_cast<int>(cap.mutated.size() + c.fresh_nodes.size() + c.base_nodes.size()));
    diff_outs.push_back(outs[k]);
    c.base_funcs.push_back(outs[k]);
    c.base_nodes.push_back(node_of(value, "a replayed view's own value"));
  }
}

// Fresh outputs and replayed views with a tangent of their own that
// require grad, get a tangent and are read by the
// other differentiable outputs' ops (their autograd graphs reach its node):
// their readers' backward is cut (CaptureOptions::cut_returned).
void Driver::pick_cuts(const std::vector<at::Tensor>& outs, const Classified& c,
                       const std::vector<at::Tensor>& diff_outs) {
  if (!options.cut_returned) return;
  const size_t unused = std::min(outs.size(), static_cast<size_t>(std::max(options.undifferentiated_outputs, 0)));
  for (size_t k = 0; k < outs.size() - unused; ++k) {
    const int slot = own_tangent_slot(cap.outputs[k], cap.mutated.size(), static_cast<int>(c.fresh_nodes.size()));
    if (slot < 0 || !outs[k].requires_grad() || !outs[k].grad_fn()) continue;
    bool taken = std::find(cap.differentiable.begin(), cap.differentiable.end(), slot) != cap.differentiable.end();
    for (const auto& r : cap.relayouts) taken &= r.first != slot;  // restrided: the caller's y is another tensor
    for (const auto& cut : cuts) taken &= !cut.second.is_same(outs[k]);
    if (taken && detail::edges_into(diff_outs, outs[k], nullptr) > 0) cuts.emplace_back(k, outs[k]);
  }
}

// Output `k`, a view of an output or an intermediate that requires grad:
// the view ops that make it from its base in the source graph, which the
// wrapper runs in place of as_strided where they make eager's geometry
// (view_replay.h): their backward hands the base a gradient laid out as
// eager's (`v.t()` of an intermediate: as_strided's backward lays it out
// as v, and the formulas after it lay an input's gradient out from it;
// fuzz seed 9963230). Null when the chain does not start at the base.
std::shared_ptr<const Graph> Driver::intermediate_view_replay(size_t k, const OutputInfo& info,
                                                              const at::Tensor& eager_base, size_t num_outputs) {
  std::vector<const Node*> src_outs = flat_output_nodes(src);
  if (src_outs.size() != num_outputs || !src_outs[k]) return nullptr;
  const Node* base = info.kind == OutputKind::view_of_output ? src_outs.at(static_cast<size_t>(info.source))
                                                             : view_chain_start(src_outs[k]);
  if (!base || base == src_outs[k] || !base->meta().tensor()) return nullptr;
  const TensorMeta& m = *base->meta().tensor();
  if (c10::IntArrayRef(m.sizes) != eager_base.sizes() || c10::IntArrayRef(m.strides) != eager_base.strides())
    return nullptr;
  return view_chain_from(base, src_outs[k]);
}

// The creation meta of eager's autograd views among the outputs.
void Driver::note_creation_meta(size_t num_outputs) {
  for (size_t k = 0; k < num_outputs; ++k) {
    OutputInfo& info = cap.outputs[k];
    bool view = info.kind == OutputKind::view_of_input || info.kind == OutputKind::view_of_output ||
                info.kind == OutputKind::view_of_intermediate;
    auto* view_meta = view && !info.detached ? torch::autograd::impl::get_view_autograd_meta(eager.outputs[k])
                                             : nullptr;
    if (view_meta && view_meta->has_bw_view())
      info.creation_meta = static_cast<uint8_t>(view_meta->get_creation_meta());
  }
}

// Fresh outputs and bases the caller's outputs reach (not only the
// unused results kept as extra outputs): those get tangents.
void Driver::pick_differentiable(const std::vector<at::Tensor>& outs, const Classified& c,
                                 std::vector<at::Tensor>& diff_outs) {
  std::vector<bool> fresh_used(c.fresh_funcs.size()), base_used(c.base_funcs.size());
  const size_t unused = std::min(outs.size(), static_cast<size_t>(std::max(options.undifferentiated_outputs, 0)));
  std::function<void(size_t)> use = [&](size_t k) {
    const OutputInfo& o = cap.outputs[k];
    if (o.kind == OutputKind::fresh) fresh_used.at(static_cast<size_t>(o.source)) = true;
    if (o.kind == OutputKind::view_of_intermediate) base_used.at(static_cast<size_t>(o.source)) = true;
    if (o.kind == OutputKind::same_as_output || o.kind == OutputKind::view_of_output)
      use(static_cast<size_t>(o.source));
  };
  for (size_t k = 0; k < outs.size() - unused; ++k) use(k);
  int slot = static_cast<int>(c.mutated_nodes.size());
  for (const auto& [list, used] : {std::pair{&c.fresh_funcs, &fresh_used}, std::pair{&c.base_funcs, &base_used}})
    for (size_t i = 0; i < list->size(); ++i) {
      const at::Tensor& f = (*list)[i];
      if (f.requires_grad() && (*used)[i]) {
        cap.differentiable.push_back(slot);
        diff_outs.push_back(f);
      }
      ++slot;
    }
}

// Output `k` is a fresh one: the graph returns `value` (for functional
// tensor `f`), laid out as eager's.
Status Driver::add_fresh(size_t k, const at::Tensor& value, const at::Tensor& f, OutputInfo info,
                 std::vector<Node*>& fresh_nodes, std::vector<at::Tensor>& fresh_funcs,
                 std::vector<size_t>& fresh_outputs) {
  info.kind = OutputKind::fresh;
  info.source = static_cast<int>(fresh_nodes.size());
  if (auto st = note_layout(static_cast<int>(cap.mutated.size() + fresh_nodes.size()), value, eager.outputs[k]); !st)
    return st;
  fresh_nodes.push_back(node_of(value, "an output"));
  fresh_outputs.push_back(k);
  fresh_funcs.push_back(f);
  cap.outputs.push_back(info);
  return ok_status();
}

// Whether graph output `node`, for eager's tensor `eager_value`, may be
// returned as it is: not when the functional value is an input or a
// constant itself (`copy_` of a same-shaped source is the source) or what
// a fresh output is, where eager's tensors share no memory (else: a copy).
bool Driver::owns_its_value(const Node* node, const at::Tensor& eager_value, const std::vector<Node*>& fresh_nodes,
                    const std::vector<size_t>& fresh_outputs) const {
  const Node* root = alias_root(node);
  if (root->kind() == NodeKind::placeholder) return false;
  if (root->kind() == NodeKind::get_attr) {
    auto attr = eager.attrs.find(root->target());
    if (attr == eager.attrs.end() || !shares_storage(attr->second, eager_value)) return false;
  }
  for (size_t j = 0; j < fresh_nodes.size(); ++j)
    if (alias_root(fresh_nodes[j]) == root && !shares_storage(eager.outputs[fresh_outputs[j]], eager_value))
      return false;
  return true;
}

// A view's dtype other than its base's is made with `view(dtype)`, which
// needs elements of one size.
Status Driver::check_dtype_view(const Geometry& g, const at::Tensor& base) {
  if (g.dtype == c10::ScalarType::Undefined || static_cast<int64_t>(c10::elementSize(g.dtype)) == base.element_size()) return ok_status();
  return Error{"AOT: an output views a tensor of another element size"};
}

// Forward output `slot` has functional value `value`; eager's tensor is
// `eager_value`. Where their layouts differ, the wrapper restrides it.
Status Driver::note_layout(int slot, const at::Tensor& value, const at::Tensor& eager_value) {
  if (same_layout(eager_value.sizes(), eager_value.strides(), value)) {
    // Strides of size-1 dims address nothing, yet `stride()` shows them
    // (`x[::2].clone()` keeps a (1, n) slice's stride): eager's are set
    // back on the output, which copies nothing.
    if (value.strides() != eager_value.strides())
      cap.relayouts.emplace_back(slot, Geometry{eager_value.sizes().vec(), eager_value.strides().vec(), 0});
    return ok_status();
  }
  if (eager_value.sizes() != value.sizes() || eager_value.storage_offset() != 0 || detail::may_overlap(eager_value))
    return Error{"AOT: output slot " + std::to_string(slot) + " has a layout the functional graph cannot give"};
  if (options.joint) return Error{"AOT: a differentiable output would need eager's layout back"};
  cap.relayouts.emplace_back(slot, Geometry{eager_value.sizes().vec(), eager_value.strides().vec(), 0});
  return ok_status();
}

}  // namespace tj::graph::aot::capture_impl
