// The AOT runtime's plan and its autograd node. One immutable `Plan` per
// compiled graph (runtime_wrapper.cpp builds it and runs calls) is shared
// by the CompiledFn and by every `CompiledFunctionBackward` node a call
// attaches to its differentiable outputs (backward_node.cpp): the node
// saves the forward's extra outputs, runs the compiled backward on the
// tangents that came, frees per output what no later backward reads, and
// hands gradients on laid out as eager's formulas would.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/function.h>

#include "compile/aot/capture.h"
#include "graph/graph.h"
#include "jit/backend.h"

namespace tj::jit::aot_rt {

struct Plan {
  std::shared_ptr<const graph::Graph> original;
  std::vector<int> unique_of;
  std::vector<graph::aot::InputInfo> inputs;
  std::vector<graph::aot::OutputInfo> outputs;
  std::vector<int> mutated;
  std::vector<std::pair<int, graph::aot::Geometry>> relayouts;  // forward output slot -> eager's layout
  std::vector<int> meta_mutated;  // unique inputs
  std::vector<int> versioned;     // unique inputs whose version counter eager bumps
  int num_fresh = 0;
  int num_bases = 0;
  int num_fw_outputs = 0;
  bool compiled_for_grad = false;  // capture assumed grad mode and inputs requiring grad
  bool enables_grad = false;       // has an enable_grad region: differentiable under no_grad too
  // Every op was traced in a no_grad region (an optimizer's step): the plan
  // runs under no_grad whatever the caller's mode, as the ops did in eager.
  bool no_grad_throughout = false;
  bool has_backward = false;
  std::vector<int> differentiable;  // forward output slots with a tangent
  std::vector<int> grad_inputs;
  std::vector<bool> grad_defined;
  std::vector<std::vector<int>> grad_tangents;  // per grad input: the tangents its gradient reads
  std::vector<int> grad_order;  // per grad input: its op's program order (Capture::grad_order)
  // The backward graph, where one was made for these sizes (not for a
  // size template's one program): run without absent tangents when some
  // did not come and the compiled backward gave a NaN or inf.
  std::shared_ptr<const graph::Graph> backward_graph;
  // Where a size template's one program with a backward serves: these
  // sizes' backward graph, read only by the layout inference of computed
  // gradients (eager_layouts; fuzz `--dynamic` seed 9985239: without it,
  // x1.grad kept the program's stride on its size-1 dim) and by the run
  // without absent tangents after a NaN or inf (seed 9992257).
  std::shared_ptr<const graph::Graph> layout_graph;
  // The functional forward graph (unique inputs -> outputs and saved
  // values), where it may be run again on the call's inputs with autograd
  // recording: a backward with create_graph=True (a gradient penalty)
  // recomputes the saved values from the inputs and runs `backward_graph`
  // on them and the incoming gradients as ATen ops, so its gradients have
  // eager's history. Null where that cannot give eager's values: the graph
  // writes or restrides an input, draws random numbers, switches grad
  // mode, or reads a synthetic base; `no_double_backward` says why.
  std::shared_ptr<const graph::Graph> forward_graph;
  std::string no_double_backward;
  // Per tangent: the saved tensors its backward reads (those meeting it at
  // some node). Only those of the incoming gradients are checked against
  // in-place writes since the forward (eager checks the ops it runs), and
  // those no output still to backpropagate through reads are freed.
  std::vector<std::vector<int>> tangent_saved;
  // Per gradient the backward returns (in its order): where it is a chain
  // of view ops of one tangent in the backward graph (add's gradient is
  // the tangent itself, squeeze's an unsqueeze of it), that tangent and
  // the chain, which the node runs on the incoming gradient itself, as
  // eager's formulas do: the backend's copy (and the contiguous copy of
  // the tangent it was given) would lay it out otherwise, and
  // AccumulateGrad keeps a stolen gradient's strides on size-1 dims. Null
  // chain: none.
  std::vector<std::pair<int, std::shared_ptr<const graph::Graph>>> grad_passes;
  // Per layout of the backward's inputs (the saved tensors' and the
  // incoming gradients' sizes and strides, and the graph): the sizes and
  // strides of each gradient it returns as eager's formulas lay them out
  // (meta inference on `backward_graph`, else `layout_graph`), or nullopt where
  // that failed.
  // Read only for a computed gradient with a size-1 dim (eager_layouts).
  struct GradLayoutCache {
    using Layouts = std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>;
    std::mutex mutex;
    std::map<std::vector<int64_t>, std::optional<Layouts>> entries;
  };
  std::shared_ptr<GradLayoutCache> grad_layout_cache = std::make_shared<GradLayoutCache>();
  // Per saved value: the strides eager gives it where the forward computed
  // it through a formula's in-place step (`masked_fill_`, recorded out of
  // place, whose kernel lays its result out anew) and they differ from the
  // forward's only on size-1 dims; empty elsewhere. The layout inference
  // reads the saved value so laid out (seed 9972207: norm's saved
  // `(x / norm).masked_fill_(...)`).
  std::vector<std::vector<int64_t>> saved_step_strides;
  // Per set of absent tangents (outputs the caller's loss does not use):
  // grad_passes of the backward without them (gradients_passed_on_without),
  // made at the first call that lacks them.
  struct AbsentPassCache {
    std::mutex mutex;
    std::map<std::vector<bool>, std::vector<std::pair<int, std::shared_ptr<const graph::Graph>>>> entries;
  };
  std::shared_ptr<AbsentPassCache> absent_pass_cache = std::make_shared<AbsentPassCache>();
  bool has_duplicates = false;
  bool has_cuts = false;  // grad_inputs has a cut edge (Capture::cut_edge)
  CompiledFn forward;
  CompiledFn backward;
};

// `a` and `b` share storage.
bool shares(const at::Tensor& a, const at::Tensor& b);

// For `backward` (saved..., tangents -> gradients): per tangent, the saved
// values its backward reads (Plan::tangent_saved).
std::vector<std::vector<int>> saved_read_per_tangent(const graph::Graph& backward, int num_tangents);

// For `backward`: per gradient it returns, the tangent it is a chain of
// view ops of, and that chain (Plan::grad_passes).
std::vector<std::pair<int, std::shared_ptr<const graph::Graph>>> gradients_passed_on(const graph::Graph& backward,
                                                                                      int num_tangents);

// gradients_passed_on for a call where the tangents marked in `absent` did
// not come: a sum `add(a, b)` one of whose operands reads tangents only
// through absent ones stands for its other operand. Eager's engine never
// runs the formulas only absent gradients reach, so its input buffer gets
// no contribution from them and passes the present one on as it came
// (fuzz seed 9980837: `x.clone()` returned and `atan2(x, x)` unused, the
// leaf's gradient the incoming one, which AccumulateGrad lays out in the
// leaf's strides). Only the gradients this changes have a chain.
std::vector<std::pair<int, std::shared_ptr<const graph::Graph>>> gradients_passed_on_without(
    const graph::Graph& backward, int num_tangents, const std::vector<bool>& absent);

// Why a backward with create_graph=True cannot recompute `forward` (the
// plan's functional forward graph) on the call's inputs as eager's history
// would: an input written or restrided, a random op, a backward inside;
// "" where it can (Plan::forward_graph).
std::string why_not_recomputable(const Plan& plan, const graph::Graph& forward);

// An in-place step of a formula, recorded out of place: eager's result is
// its first argument, so `n`'s meta takes that argument's strides where the
// sizes agree.
void keep_layout_of_first_argument(graph::Node& n);

// Plan::saved_step_strides for `forward` (inputs -> forward outputs, then
// the saved values), whose first `num_fw_outputs` outputs are not saved.
std::vector<std::vector<int64_t>> saved_inplace_step_strides(const graph::Graph& forward, int num_fw_outputs);

// A size template's one program serves `plan`'s sizes: these sizes'
// partition (`forward`, `backward`), made only for the layouts of computed
// gradients and the run without absent tangents (Plan::layout_graph, and
// the saved values' in-place-step strides the layouts read).
void take_layout_graph(Plan& plan, const std::shared_ptr<const graph::Graph>& forward,
                       const std::shared_ptr<const graph::Graph>& backward);

// The groups of differentiable outputs (tangents) joined by the gradient
// edges that read them: per group its outputs and its edges (one node per
// group, CompiledFunctionBackwardPart; none where an edge reads no tangent).
using OutputGroups = std::vector<std::pair<std::vector<size_t>, std::vector<size_t>>>;
OutputGroups output_groups(const Plan& plan);

// `groups` as the parts attach_backward makes, in the order it makes them:
// groups whose orders of a leaf's contributions conflict merged, the others
// ordered so that every leaf gets its contributions in eager's order.
OutputGroups in_arrival_order(const Plan& plan, const OutputGroups& groups);

// Every cut edge (Capture::cut_edge) of `plan` is handed on by another part
// than its output's, and the parts' cut edges make no cycle: where not,
// the capture is made again without cuts (a hook on such an output then
// misses its readers' part: open_hook_on_cut_output_whose_groups_merge).
bool cuts_kept_apart(const Plan& plan);

// The forward slot of the output a cut edge (`grad_input`, Capture::cut_edge)
// of `plan` leads to: its own tangent's slot (-1: none).
int cut_edge_slot(const Plan& plan, int grad_input);

// Parts attach_backward made of several output groups merged because their
// orders of a leaf's contributions cross (in_arrival_order): such a part
// runs whole for a backward from any of its outputs. Counted per forward
// call; tracejit.counters()'s `aot_merged_backward_parts`.
long long merged_backward_parts();
void zero_merged_backward_parts();

// Gives the differentiable outputs of `fw` (the forward's results for one
// call on `unique` inputs) one CompiledFunctionBackward node, saving the
// forward's extra outputs. A gradient edge with a relay (grad_relays.h;
// `relays` empty: none) leads to it.
void attach_backward(const std::shared_ptr<const Plan>& plan, const std::vector<at::Tensor>& unique,
                     std::vector<at::Tensor>& fw,
                     const std::vector<std::shared_ptr<torch::autograd::Node>>& relays = {});

}  // namespace tj::jit::aot_rt
