// Proxy tensors: the recording half of AOT capture (internal to src/graph/aot).
//
// A proxy is a storage-less `TensorImpl` on the meta device whose dispatch
// keys are {PrivateUse1, AutogradPrivateUse1, ADInplaceOrView}; it holds a
// real meta tensor (sizes, strides, offset, dtype; views of one meta storage
// alias as the real tensors do) and the graph node that produces its value.
// LibTorch's autograd and functionalization run above it unchanged; every
// ATen call that reaches the backend key lands in one boxed function that
// appends a call_function node to the current thread's `Recorder` graph,
// computes the results on meta tensors (the op's Meta kernel, else a
// hand-written rule from graph/meta_rules.h, else the op on zero-filled CPU
// tensors) and returns new proxies. Ops whose CompositeExplicitAutograd
// kernel would otherwise decompose them below us (`sin` -> `sin.out`) get
// the same boxed function registered per op, once. Data-dependent ops
// (`nonzero`, `item`, ...) fail the capture with a message naming the op;
// a residual in-place op on a fresh tensor (a CompositeImplicit decomposition
// such as dropout's `bernoulli_`) is recorded as its functional overload.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/Device.h>

#include "graph/graph.h"

namespace tj::graph::aot::detail {

struct EngineSums;  // engine_sums.h

// One recording: the graph nodes are appended to and the real device the
// recorded graph will run on (meta devices in recorded arguments become it).
struct Recorder {
  Graph* graph = nullptr;
  c10::Device device = c10::Device(c10::kCPU);
  int64_t recorded = 0;  // number of ATen calls recorded
  int constants = 0;     // tensor constants added as attributes
  // While an EngineSumScope is alive (engine_sums.h): where the nodes
  // recorded outside every autograd node's apply are noted.
  EngineSums* engine_sums = nullptr;
};

// Makes `rec` the current thread's recorder for its lifetime.
class RecordingScope {
 public:
  explicit RecordingScope(Recorder* rec);
  ~RecordingScope();
  RecordingScope(const RecordingScope&) = delete;
  RecordingScope& operator=(const RecordingScope&) = delete;

 private:
  Recorder* prev_;
};

// Registers the boxed recording function with the dispatcher (once; ~15 ms).
void ensure_registered();

// A proxy for `node`'s value, shaped like the meta tensor `meta`.
at::Tensor make_proxy(const at::Tensor& meta, Node* node);
// The node behind proxy `t` (nullptr when `t` is no proxy).
Node* proxy_node(const at::Tensor& t);
// The meta tensor behind proxy `t` (undefined when `t` is no proxy).
at::Tensor proxy_meta(const at::Tensor& t);

// `op` on the meta tensors of `stack`: its Meta kernel, else a rule from
// graph/meta_rules.h, else the op on zero-filled CPU tensors. Returns the
// results.
std::vector<c10::IValue> run_meta(const c10::OperatorHandle& op, const c10::FunctionSchema& schema,
                                  const std::string& qualified, std::vector<c10::IValue> stack);

// A meta tensor described by `m` (on its own meta storage).
at::Tensor meta_tensor(const TensorMeta& m);
// The description of a meta (or proxy) tensor on the real `device`.
TensorMeta describe_meta(const at::Tensor& t, c10::Device device);

}  // namespace tj::graph::aot::detail
