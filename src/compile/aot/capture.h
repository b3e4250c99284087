// AOT capture: a captured (possibly mutating, aliasing) graph turned into a
// functional graph plus the metadata a runtime wrapper needs to give the
// caller eager's side effects and aliasing back (the seed's
// `run_functionalized_fw_and_collect_metadata` + `ViewAndMutationMeta`).
//
// The captured graph is run op by op on proxy tensors (aot/proxy.h) wrapped
// in LibTorch's FunctionalTensorWrapper, with views re-applied
// (`FunctionalizationReapplyViewsGuard`), so the recorded graph has no
// in-place ops: input mutations become new values, views of mutated tensors
// are regenerated (`select_scatter`, ...). Inputs are deduplicated by
// identity (`aot_wrapper_dedupe`); mutated inputs that share memory with
// other inputs are captured again as views of one synthetic base
// (`merge_view_inputs`). After the run each input is classified
// (data mutated: its new value is a graph output the wrapper `copy_`s back;
// metadata mutated (`t_`): its final geometry; the number of version-counter
// bumps eager makes, read off the functional tensor's own counter) and each
// output (fresh; the input itself; a view of an input; the same tensor as an
// earlier output; a view of another output; a view of an intermediate, whose
// base becomes an extra graph output). Views are regenerated from static
// geometry: sizes, strides and the offset relative to the base's offset,
// all of them eager's (aot/eager_meta.h: the graph also runs with eager's
// semantics on meta tensors), never those of the functional values.
//
// With `joint`, inputs that require grad get `requires_grad` on their
// functional wrappers and `torch::autograd::grad` runs LibTorch's own
// derivative formulas on the proxies with one tangent placeholder per
// differentiable output: the backward is recorded into the same graph (see
// partition.h to split it). Capture errors (a data-dependent op, an op that
// cannot run on meta tensors, mutated inputs that alias each other) are
// values: the caller runs the graph uncompiled.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include "graph/graph.h"
#include "support/expected.h"

namespace tj::graph::aot {

// A view's geometry relative to its base: sizes, strides, and the storage
// offset minus the base's offset.
// For a view, `dtype` is set when it differs from its base's (`view(dtype)`).
struct Geometry {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset_delta = 0;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
};

// One placeholder of the functional graph: a caller's input (deduplicated),
// or a synthetic base: a 1-d tensor over the whole storage that mutated
// inputs share with other inputs (`members`: their positions), which the
// wrapper builds from the first member's storage.
struct InputInfo {
  int position = 0;             // first position in the captured graph's inputs
  bool synthetic_base = false;
  std::vector<int> members;     // synthetic base: the positions that view it
  bool requires_grad = false;   // differentiated in the joint graph
  bool data_mutated = false;    // new value returned by the graph, copy_'d back
  bool meta_mutated = false;    // sizes/strides/offset changed (t_, as_strided_)
  Geometry final_geometry;      // when meta_mutated (delta from the original offset)
  int64_t version_bumps = 0;    // how many times eager bumps its version counter
};

enum class OutputKind {
  fresh,                 // a new tensor: one of the graph's outputs
  input,                 // the caller's input at position `source` itself
  view_of_input,         // a view of the caller's input at position `source`
  same_as_output,        // the same tensor as output `source`
  view_of_output,        // a view of output `source`
  view_of_intermediate,  // a view of intermediate base `source` (an extra graph output)
};
const char* output_kind_name(OutputKind kind);

struct OutputInfo {
  OutputKind kind = OutputKind::fresh;
  int source = 0;  // fresh: its slot among the fresh outputs; see OutputKind
  Geometry geometry;  // the view kinds
  // view_of_output: eager's tensor shares memory without being a view
  // (`detach()`); view_of_input: it views a detached alias of an input
  // that requires grad (`x.detach().t()`), so it requires no grad itself.
  bool detached = false;
  // view_of_output, view_of_intermediate: a view of a detached alias of a
  // base that requires grad (`v.detach().chunk(2)[1]`, the detach() made
  // before a write to v): made from the base's detach(), requiring no grad.
  bool of_detached_base = false;
  // The view kinds: the autograd creation meta of eager's view
  // (torch::autograd::CreationMeta: 0 default, 2 made by a function with
  // several view outputs, 3 made in no-grad mode), which decides whether
  // autograd lets an in-place op write it. The wrapper's regenerated view
  // gets it too.
  uint8_t creation_meta = 0;
  // view_of_input that requires grad, of an input that overlaps itself: the
  // view ops that make it from that input (aot/view_replay.h), which the
  // wrapper runs in place of as_strided (whose backward spreads gradients
  // over overlapping elements).
  std::shared_ptr<const Graph> replay;
  // The replay's start: -1 the input `source`; else an earlier output
  // (itself a replayed view of that input) that eager's chain of views
  // passes through (`v = x.t(); return v, v.reshape(s)`): replayed from it,
  // the two outputs share eager's view node, where eager's engine sums
  // their gradients before the rest of the chain (fuzz seed 9981084).
  int replay_from = -1;
  // view_of_output, view_of_intermediate, replayed and requiring grad: the
  // intermediate base (a clone of the view's value, an extra graph output)
  // whose tangent is this view's own gradient, -1: none. The capture hands
  // the view its own tangent, so the recorded backward adds it where eager's
  // engine does (in the view node's input buffer, with the contributions of
  // the ops that read the view, before the view's backward); the wrapper
  // points the replayed view's gradient edge at that tangent's node input.
  int grad_base = -1;
  // view_of_input that requires grad: the program order (1-based; 0
  // unknown) of eager's view op that hands the input its gradient, ranked
  // with the backward node's contributions (Capture::grad_order).
  int grad_order = 0;
};

// The forward output slot (index into mutated|fresh|bases) whose tangent
// is output `o`'s own gradient: a fresh output's value, a replayed view's
// own (OutputInfo::grad_base); -1 where none is its own.
inline int own_tangent_slot(const OutputInfo& o, size_t num_mutated, int num_fresh) {
  if (o.kind == OutputKind::fresh) return static_cast<int>(num_mutated) + o.source;
  if ((o.kind == OutputKind::view_of_output || o.kind == OutputKind::view_of_intermediate) && o.grad_base >= 0)
    return static_cast<int>(num_mutated) + num_fresh + o.grad_base;
  return -1;
}

// The functional graph and how its outputs map to the caller's world.
// Graph placeholders: the unique inputs, then (joint) one tangent per
// differentiable forward output. Graph outputs, in order: the new values of
// data-mutated inputs, the fresh outputs, the intermediate bases, then
// (joint) the gradient of each input that requires grad and is used
// (`grad_defined`).
struct Capture {
  std::unique_ptr<Graph> graph;
  std::vector<int> unique_of;  // captured input position -> unique input index
  std::vector<InputInfo> inputs;
  std::vector<OutputInfo> outputs;
  std::vector<int> mutated;    // unique inputs whose data is mutated, in output order
  // Forward output slots (index into mutated|fresh|bases) whose functional
  // value is laid out otherwise than eager's tensor (an in-place op whose
  // functional form picks other strides): the wrapper copies such an output
  // into `layout` (sizes, strides; offset 0) when its strides differ.
  std::vector<std::pair<int, Geometry>> relayouts;
  int num_fresh = 0;
  int num_bases = 0;
  // Joint only: forward output slots (index into mutated|fresh|bases) that
  // get a tangent, in tangent order; unique inputs whose gradients the graph
  // returns, in order: one entry per edge of the backward node, so an input
  // whose gradient is returned as the engine's contributions
  // (engine_sums.h) comes once per contribution. An entry `cut_edge(k)`
  // (negative) is the gradient the other outputs' ops hand a returned
  // intermediate, fresh output k (CaptureOptions::cut_returned): its edge
  // leads to output k's own node input, where eager's engine adds it to
  // k's own gradient before k's hooks and k's backward run.
  std::vector<int> differentiable;
  std::vector<int> grad_inputs;
  std::vector<bool> grad_defined;  // per grad input: the graph returns it (else None: unused)
  // Per grad input: the tangents (indices into `differentiable`) its
  // gradient reads. When every one of them is undefined at run time (the
  // caller's backward never reached those outputs), the input gets None, as
  // eager's engine never runs the nodes in between; empty: read none.
  std::vector<std::vector<int>> grad_tangents;
  // Per grad input: the program order (1-based; 0 unknown) of the op
  // whose formula made that contribution, ranked with the outputs'
  // OutputInfo::grad_order. LibTorch 1.13's engine runs the ready node
  // with the highest sequence number first, so eager's contributions to a
  // leaf arrive as their ops stand in the program, and the sums'
  // layouts follow that order; the wrapper draws the sequence numbers of
  // the views it makes again and of a relay node per contribution in
  // this order (backward_node.h, make_relays).
  std::vector<int> grad_order;
  bool joint = false;
  int64_t recorded_ops = 0;

  static int cut_edge(size_t output) { return -1 - static_cast<int>(output); }
  static bool is_cut_edge(int grad_input) { return grad_input < 0; }
  static size_t cut_output(int grad_input) { return static_cast<size_t>(-1 - grad_input); }
  int num_forward_outputs() const { return static_cast<int>(mutated.size()) + num_fresh + num_bases; }
  std::string summary() const;
};

struct CaptureOptions {
  // Record the backward too (only when some input requires grad).
  bool joint = false;
  // With `joint`: the grad mode of nodes without a `grad_enabled` tag (the
  // mode the frame was compiled under). Tagged nodes (traced inside `with
  // torch.no_grad():` / `enable_grad()`) are recorded under their own mode,
  // so a no_grad region is not differentiated, as in eager.
  bool grad_enabled = true;
  // With `joint`: the graph's last N (flattened) outputs are results nobody
  // uses, kept only so that their ops run (compile/aot/boundary.h). They get
  // no tangent: dead code adds nothing to the backward (a NaN derivative
  // times a zero tangent is NaN), and an input read only by it gets no
  // gradient, as in eager.
  int undifferentiated_outputs = 0;
  // The graph runs a traced backward (aot/joint_step.h): without `joint`,
  // inputs that require grad get it on their functional wrappers and nodes
  // record under grad mode as with `joint`, so the node's backward lands in
  // the graph; no tangents, no gradient outputs.
  bool backward_inside = false;
  // With `joint`: a fresh output (or a replayed view with a tangent of its
  // own) that requires grad and that other differentiable outputs' ops read (`y = x * 2; return y, y.exp()`) cuts
  // the recorded backward: those ops hand their gradient to a cut edge
  // (Capture::cut_edge) instead of y's formula, so y's node receives y's
  // whole gradient, as in eager, where a hook registered on y after the
  // call, `y.retain_grad()` or `autograd.grad(loss, y)` see it.
  bool cut_returned = true;
};

// `graph`: the captured graph; `example_inputs`: one real tensor per placeholder.
Expected<Capture> capture(const Graph& graph, c10::ArrayRef<at::Tensor> example_inputs,
                          const CaptureOptions& options);

}  // namespace tj::graph::aot
