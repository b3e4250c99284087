// Lowering: a functional graph becomes a `Program`, the list of steps the
// llvm backend's executor runs.
//
// Pointwise ATen ops (lower_pointwise.cpp; docs/adding_an_op.md says how to
// add one) and the reductions that consume them or that they consume
// (lower_reductions.cpp: sum, mean, amax/amin, argmax/argmin, var/std,
// softmax, log_softmax, layer_norm) are gathered into fusion groups; each
// group becomes one loop-IR kernel (loop_ir.h). Every other node (mm, conv,
// views, random, ops the tables do not know or cannot take with these
// dtypes) is an extern step run through ATen's boxed dispatcher, exactly as
// aot_eager runs it.
//
// Grouping is one greedy pass in graph order (fusion_group.h; pure 0-d
// nodes are visited as soon as their inputs are ready): a pointwise
// node joins the open group when it has the group's shape (or, once the
// group reduces, one value per row of it); a reduction joins when it reads
// a tensor of the group's shape over the dims the group already reduces
// (the first one turns a pointwise group into a reduction group); a view
// that only adds or drops size-1 dims of a member is the member itself.
// Anything else closes the group and opens a new one; an extern node that
// reads a value of the open group closes the group first (the group runs
// before it). Extern nodes that do not read the group run before it, which
// keeps every dependency: group members only read earlier nodes. Only group
// values read outside the group are stored, with the strides of the node's
// fake TensorMeta (eager's).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"
#include "jit/loop_ir.h"
#include "jit/onednn_plan.h"
#include "jit/transposed_conv.h"
#include "support/expected.h"

namespace tj::jit {

struct LoweringOptions {
  // config.debug_inject_bug: "", "relu_compile_error", "relu_runtime_error",
  // "relu_accuracy_error", "relu_internal_error" (API.md).
  std::string inject_bug;
  // Convolutions and large float32 Linears, with the post-ops after them,
  // run as oneDNN primitives (onednn_plan.h): the llvm backend, unless
  // TRACEJIT_ONEDNN=0.
  bool onednn = false;
  // Transposed convolutions left to ATen (not oneDNN steps) run through
  // ATen's plain-convolution path (transposed_conv.h): the host, unless
  // TRACEJIT_TCONV=0.
  bool transposed_conv = false;
  // A sum or mean across the rows of a layout whose contiguous dim it
  // keeps (a Linear's bias gradient, `sum(0)`) runs as ATen's op, which
  // vectorizes along that dim (sums_across_contiguous_rows in
  // fusion_group.h): the host.
  bool outer_sums_to_aten = false;

  bool operator==(const LoweringOptions&) const = default;
};

// Where a lowered program runs: the host (the llvm backend's executor, and
// every graph the nvrtc backend runs there) or a CUDA device (the nvrtc
// backend's device programs: kernels only).
enum class LoweringTarget { host, cuda };

// The options every backend lowers with, built in this one place:
// config.debug_inject_bug (llvm_backend.h), and on the host oneDNN steps
// unless TRACEJIT_ONEDNN=0 or an input requires grad (a training graph's
// forward: oneDNN's convolutions round otherwise than ATen's, and a few
// optimizer steps grow that into other losses than eager's; kept to
// inference until judged against float64 there).
LoweringOptions lowering_options(LoweringTarget target, const graph::Graph& graph);

struct Step {
  enum class Kind { extern_op, kernel } kind = Kind::extern_op;
  const graph::Node* node = nullptr;  // extern_op
  int slot = -1;                      // extern_op: where its value goes
  int kernel = -1;                    // kernel: index into Program::kernels
  std::vector<int> inputs;            // kernel: slots read, in kernel input order
  std::vector<int> outputs;           // kernel: slots written, in kernel output order
  std::vector<graph::TensorMeta> output_metas;
  // kernel: the nodes it computes, in graph order: run op by op instead
  // when an input does not lie at run time as compiled (its sizes or dtype
  // differ from its node's meta: a meta kernel that is wrong for an op)
  std::vector<const graph::Node*> members;
  // kernel: per output, read only inside the graph (not a graph output):
  // its buffer may come from a released one
  std::vector<bool> internal;
  // kernel: per buffer (outputs, then inputs), per kernel dim, the tensor
  // dim whose stride it takes (-1: stride 0)
  std::vector<std::vector<int>> dim_maps;
  bool fail_at_run_time = false;      // debug_inject_bug=relu_runtime_error
  // extern_op: a oneDNN step (onednn_plan.h): `node` is its head,
  // `members` the nodes it computes (the head first; the last one's value
  // goes to `slot`), `inputs` the slots of the input, the weight, the bias
  // and the residual (-1: none)
  std::shared_ptr<const onednn::Plan> onednn;
  // extern_op: a transposed convolution (or its backward) run through
  // ATen's plain-convolution path (transposed_conv.h)
  tconv::Form tconv = tconv::Form::none;
  // extern_op `aten::cat` along the channels of channels-last operands (onednn_layout.h): written by
  // onednn::run_cat into a result of eager's strides or, `channels_last`, channels-last ones; `aten`: ATen's op
  enum class Cat { aten, eager_strides, channels_last } cat = Cat::aten;
  // channels_last: the channels of the widest later cat whose parts begin with this one's (a densenet block's
  // chain): the result is the first channels of a buffer that wide, which those cats extend in place
  int64_t cat_capacity = 0;
  // kernel: compute-bound (costly functions on many elements): its rows are
  // shared among ATen's intra-op threads (at::parallel_for)
  bool parallel = false;
  std::vector<int> release;           // slots whose last use is this step
  // kernel: per output, the graph input (placeholder position) whose tensor
  // it is written into, or -1. A functional graph's new value of an input
  // that AOT writes back (the placeholder's tag "donated_to_output") goes
  // straight into that input when nothing reads its old value afterwards
  // and nothing after it can fail (see `plan_donations` in lowering.cpp).
  std::vector<int> donated;
  // Values copied, right after this step, into the graph input AOT would
  // copy them into, the input then standing for the value (slot, placeholder
  // position): a new value that cannot be written in place where it is made
  // (an optimizer's update followed by a step that may raise on data, or an
  // extern op's result) is written back as soon as no later step can fail
  // and nothing reads the old value, and its own buffer goes there instead
  // of at the end of the graph (plan_donations).
  std::vector<std::pair<int, int>> write_back;
};

struct Program {
  std::shared_ptr<const graph::Graph> graph;
  std::vector<loop::Kernel> kernels;
  std::vector<Step> steps;
  std::vector<int> input_slots;  // one per placeholder
  std::unordered_map<const graph::Node*, int> slot_of;
  int num_slots = 0;
  int fused_nodes = 0;  // nodes that went into kernels
  // values kept channels-last across llvm kernels or a `cat` (onednn_layout.h)
  int channels_last_values = 0;
};

Expected<Program> lower(std::shared_ptr<const graph::Graph> graph, const LoweringOptions& options);

// The nodes in the order `lower` visits them: the graph's, except that a
// pure 0-d computation runs as soon as its inputs are ready, so that the
// scalars interleaved with tensor ops (bias corrections between the moment
// updates of Adam) do not cut one fusion group into many. Side-effecting
// nodes keep their order among themselves.
std::vector<const graph::Node*> fusion_order(const graph::Graph& g);

}  // namespace tj::jit
