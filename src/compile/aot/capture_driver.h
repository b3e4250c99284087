// AOT capture's driver, shared by its two halves: capture.cpp (inputs,
// running the graph on functional proxies, custom Functions, batch norm,
// factories, the backward) and capture_outputs.cpp (classifying inputs and
// outputs: mutations, aliases, eager's layouts). Internal to compile/aot.
#pragma once

#include "compile/aot/capture.h"
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <ATen/FunctionalStorageImpl.h>
#include <ATen/SavedTensorHooks.h>
#include <ATen/FunctionalTensorWrapper.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/InferenceMode.h>
#include <ATen/ops/clone.h>
#include <ATen/ops/native_batch_norm.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/variable.h>
#include "compile/aot/eager_meta.h"
#include "graph/autograd_function.h"
#include "compile/aot/proxy.h"
#include "compile/aot/view_replay.h"
#include "graph/boxing.h"
#include "graph/interpreter.h"
#include "graph/meta_rules.h"
#include "graph/op_registry.h"
#include "graph/passes/dce.h"

namespace tj::graph::aot::capture_impl {

namespace fn = at::functionalization::impl;

at::functionalization::FunctionalStorageImpl* functional_storage(const at::Tensor& f);

// The current value (a proxy) of functional tensor `f`.
at::Tensor current_value(const at::Tensor& f);

// The latest value of the whole storage behind functional tensor `f`.
at::Tensor storage_base(const at::Tensor& f);

Node* node_of(const at::Tensor& proxy, const char* what);

Geometry geometry(const at::Tensor& view, int64_t base_offset);

// Same sizes, and the same strides on every dimension longer than 1.
bool same_layout(c10::IntArrayRef sizes, c10::IntArrayRef strides, const at::Tensor& t);

// Eager's geometry of `view` relative to `base_offset`; the dtype when it
// is not `base_dtype`.
Geometry eager_geometry(const at::Tensor& view, int64_t base_offset, c10::ScalarType base_dtype);

bool shares_storage(const at::Tensor& a, const at::Tensor& b);

// Python's saved-tensor hooks (`torch.autograd.graph.saved_tensors_hooks`,
// and the non-reentrant `torch.utils.checkpoint`'s, active while a compiled
// block runs inside one) are off while a graph is captured (and while the
// template_fit.h check runs the graph on meta tensors): they would pack
// the proxies the capture's autograd saves, and a checkpoint's unpack would
// rerun its block on real tensors inside the capture (wrong gradients,
// kept in the graph cache). A call under such hooks that needs a backward
// runs op by op (runtime_wrapper.cpp's `run`).
class SavedTensorHooksOff {
 public:
  SavedTensorHooksOff() : saved_(at::SavedTensorDefaultHooks::get_tls_state()) {
    at::SavedTensorDefaultHooks::set_tls_state(at::impl::SavedTensorDefaultHooksTLS{});
  }
  ~SavedTensorHooksOff() { at::SavedTensorDefaultHooks::set_tls_state(saved_); }
  SavedTensorHooksOff(const SavedTensorHooksOff&) = delete;
  SavedTensorHooksOff& operator=(const SavedTensorHooksOff&) = delete;

 private:
  at::impl::SavedTensorDefaultHooksTLS saved_;
};

// The node whose value `n`'s value is a view of (through view ops and
// getitem of their sequences), or `n` itself.
const Node* alias_root(const Node* n);

bool metadata_mutation(const std::string& name);

struct Driver {
  const Graph& src;
  c10::ArrayRef<at::Tensor> examples;
  const CaptureOptions& options;
  Capture cap{};
  detail::Recorder rec{};
  std::vector<at::Tensor> funcs;         // per unique input: its functional tensor
  std::vector<Node*> placeholders;       // per unique input
  std::vector<at::Tensor> originals;     // per unique input: the proxy it started as
  std::vector<at::Tensor> pos_funcs;     // per captured position: its functional tensor
  std::unordered_map<size_t, int64_t> bump_correction;  // per unique input
  std::set<const c10::StorageImpl*> merged;    // storages captured as synthetic bases
  std::set<const c10::StorageImpl*> to_merge;  // found to need it
  detail::EagerMeta eager{};                   // the graph run with eager's semantics on meta tensors
  // The capture's sequence numbers behind OutputInfo::grad_order (per
  // output) and Capture::grad_order (per grad input), ranked by go().
  std::vector<uint64_t> output_seqs;
  std::vector<uint64_t> grad_seqs;
  // Returned intermediates whose readers' backward is cut
  // (CaptureOptions::cut_returned): (output index, its functional tensor).
  std::vector<std::pair<size_t, at::Tensor>> cuts;

  // Autograd records on the functional tensors (a joint capture, or a
  // traced backward inside the graph: aot/joint_step.h).
  bool records_grad() const { return options.joint || options.backward_inside; }

  // One functional tensor per position. Inputs sharing storage with one in
  // `merged` become views (as_strided) of one synthetic base placeholder
  // covering that storage (the seed's merge_view_inputs), so a mutation
  // through one is seen through the others.
  Status setup_inputs(const std::set<const c10::StorageImpl*>& merged);

  // Runs the captured graph on the functional inputs; returns its tensors.
  Expected<std::vector<at::Tensor>> run();

  // Runs `g` (the captured graph, or a custom Function's backward body) on
  // `inputs`, one per placeholder; returns the value of its output node.
  Expected<c10::IValue> run_graph(const Graph& g, const std::vector<c10::IValue>& inputs);

  // A custom Function: its outputs get the autograd node, whose backward
  // runs the body on these functional tensors while `backward()` records,
  // so the body's ops land in the joint graph (and zeros for undefined
  // grads are recorded as factory nodes).
  Expected<c10::IValue> autograd_function(const Graph& g, const Node& node, const graph::detail::ValueOf& value_of);

  // `aten::zeros` recorded as a node, shaped like `like`.
  at::Tensor recorded_zeros(const TensorMeta& like);

  // Batch norm in training mode with running statistics: the kernel updates
  // them in place although its schema says it does not, so functionalization
  // would drop the update. Run it without them and update them explicitly on
  // the functional tensors (a copy_ each, so they become mutated inputs);
  // eager does not bump their version counters, so neither do we. Returns
  // None when `node` is no such call.
  Expected<c10::IValue> batch_norm(const Node& node, const graph::detail::ValueOf& value_of);

  Expected<c10::IValue> factory(const Node& node, const graph::detail::ValueOf& value_of);

  // Fills input and output metadata; returns the forward output nodes.
  Expected<std::vector<Node*>> classify(const std::vector<at::Tensor>& outs, std::vector<at::Tensor>& diff_outs);
  // What classify gathers on the way: the forward's output nodes (new
  // values of mutated inputs, fresh outputs, intermediate bases), the
  // functional tensors of fresh outputs and bases, and per fresh node its
  // output index.
  struct Classified {
    std::vector<Node*> mutated_nodes, fresh_nodes, base_nodes;
    std::vector<at::Tensor> fresh_funcs, base_funcs;
    std::vector<size_t> fresh_outputs;
  };
  // classify's steps, in order (capture_outputs.cpp).
  Status classify_inputs(std::vector<Node*>& mutated_nodes);
  void copy_overwritten_values(std::vector<Node*>& mutated_nodes);
  Status refuse_shared_mutated_inputs();
  Status classify_output(size_t k, const std::vector<at::Tensor>& outs, std::vector<const c10::TensorImpl*>& out_impls,
                         Classified& c);
  Status classify_view_of_input(size_t k, size_t num_outputs, int found, const at::Tensor& f,
                                const at::Tensor& eager_out, OutputInfo info);
  Status classify_unviewed_output(size_t k, const at::Tensor& f, at::Tensor value, const at::Tensor& eager_out,
                                  OutputInfo info, Classified& c);
  Status resolve_intermediate_views(const std::vector<at::Tensor>& outs, Classified& c);
  void give_views_tangents(const std::vector<at::Tensor>& outs, Classified& c, std::vector<at::Tensor>& diff_outs);
  std::shared_ptr<const Graph> intermediate_view_replay(size_t k, const OutputInfo& info, const at::Tensor& eager_base,
                                                        size_t num_outputs);
  void note_creation_meta(size_t num_outputs);
  void pick_cuts(const std::vector<at::Tensor>& outs, const Classified& c, const std::vector<at::Tensor>& diff_outs);
  void pick_differentiable(const std::vector<at::Tensor>& outs, const Classified& c, std::vector<at::Tensor>& diff_outs);

  // Output `k` is a fresh one: the graph returns `value` (for functional
  // tensor `f`), laid out as eager's.
  Status add_fresh(size_t k, const at::Tensor& value, const at::Tensor& f, OutputInfo info,
                   std::vector<Node*>& fresh_nodes, std::vector<at::Tensor>& fresh_funcs,
                   std::vector<size_t>& fresh_outputs);

  // Whether graph output `node`, for eager's tensor `eager_value`, may be
  // returned as it is: not when the functional value is an input or a
  // constant itself (`copy_` of a same-shaped source is the source) or what
  // a fresh output is, where eager's tensors share no memory (else: a copy).
  bool owns_its_value(const Node* node, const at::Tensor& eager_value, const std::vector<Node*>& fresh_nodes,
                      const std::vector<size_t>& fresh_outputs) const;

  // A view's dtype other than its base's is made with `view(dtype)`, which
  // needs elements of one size.
  static Status check_dtype_view(const Geometry& g, const at::Tensor& base);

  // Forward output `slot` has functional value `value`; eager's tensor is
  // `eager_value`. Where their layouts differ, the wrapper restrides it.
  Status note_layout(int slot, const at::Tensor& value, const at::Tensor& eager_value);

  // The tangents (by index) that `n` reads, directly or through other nodes.
  static std::vector<int> tangents_read(Node* n, const std::unordered_map<const Node*, int>& tangent_index);

  // Records the backward: one tangent per differentiable output.
  Expected<std::vector<Arg>> backward(const std::vector<at::Tensor>& diff_outs);
  // Points the readers' gradient edges of each cut output at a leaf of its
  // own, added to `wrt` (its entry in Capture::grad_inputs: a cut edge).
  bool split_for_history(const std::vector<at::Tensor>& diff_outs,
                         const std::vector<std::vector<int>>& reached_by) const;
  void cut_readers(const std::vector<at::Tensor>& diff_outs, std::vector<at::Tensor>& wrt,
                   std::vector<at::Tensor>& cut_leaves);
  void rank_grad_orders();

  Expected<Capture> go();
};

}  // namespace tj::graph::aot::capture_impl
