// Probe captures: an AOT size template from one real capture (issue 43).
//
// A dynamic entry (compiled_graph.cpp) or a stage of a graph with
// data-dependent sizes (unbacked_stages.cpp) used to capture three sizes
// before its AOT size template (graph/size_template.h) could be made: a
// template is fitted from the concrete ints of captures (LibTorch 1.13's
// kernels cannot run on symbolic sizes), and two points fit several size
// forms at once. AOT's capture runs on proxy tensors (compile/aot/proxy.h):
// it reads only the inputs' metadata, never their data. So the points the
// fit needs beyond the first real capture are taken at sizes of our
// choosing, on fresh uninitialized tensors of those sizes: probes. When a
// second size signature comes, each dim that differs between the first
// capture's sizes `a` and the new ones `b` is probed at max(a, b) + k * |b - a|
// (k = 1, 2, 3): above both (lower bounds the two share still hold) and
// congruent to them modulo |b - a|. A probe runs the compile pipeline's
// steps up to the capture (compile::capture_probe: fold sizes, AOT boundary,
// capture) and is counted in `aot_size_probes`, not in `aot_captures`:
// nothing it makes is partitioned, compiled or run. The template is fitted
// from the real point and the three probes exactly as from four real
// captures (one form must fit every point, and the template must give each
// point's graph back), so the new size and later ones are served by it
// with no capture. A template serves only sizes that keep the orders its
// points kept (graph/size_template.h: orders between classes, bounds
// against the fixed sizes), each tested by one more probe that breaks them
// (the classes' order reversed; then each class past the fixed sizes it
// stayed under; then under those it stayed over): where the fit holds
// there too, the template made with that point keeps none of them.
// Whatever stops this (inputs that share memory otherwise
// than at the first capture or with a layout no size explains, an input whose
// sizes change is not dense, starts past its storage's offset 0 or
// was laid out otherwise at the first capture, a dim that changes is 0 or 1, the shapes
// or a size fact fail at a probe size, the capture fails or adds other
// outputs, no unique fit) leaves the caller capturing as before.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include "compile/aot/boundary.h"
#include "compile/aot/runtime_wrapper.h"
#include "graph/graph.h"
#include "runtime/backend_step.h"

namespace tj::runtime {

struct ProbeRequest {
  const graph::Graph* traced = nullptr;  // the entry's (or stage's) graph, before its sizes are folded
  std::shared_ptr<const jit::AotPoint> first;  // its one real capture
  const compile::AotBoundary* boundary = nullptr;  // the boundary around it
  std::vector<std::vector<int64_t>> first_sizes;  // per input: the sizes of that capture
  std::vector<std::vector<int64_t>> first_strides;  // ... and the strides
  // ... and, where the inputs may share memory, the offsets and, per input,
  // the first input sharing its storage (itself when none). Inputs that
  // share memory at both calls in the same groups are probed as views of
  // one fresh tensor (where(cond)'s rows and cols, views of one nonzero
  // result): each stride and offset that changes is extrapolated from the
  // two calls by a size that changes with it (cols's offset is the count).
  // Empty: inputs that share memory are refused.
  std::vector<int64_t> first_offsets;
  std::vector<size_t> first_alias;
  // True: a probe's placeholders get the probe tensors' own metas (a stage,
  // as compile_level sets them); false: the traced metas with the probe's
  // sizes and strides (a dynamic entry, as compiled_for_sizes sets them).
  bool metas_of_inputs = false;
  // The last `value_inputs` inputs are values read as sizes ([v, 0], a
  // stage's `carried` copy: unbacked_stages.cpp). Their sizes are free of
  // the others: probes move them a step behind the input sizes, so a value
  // that moves with an input size (x[:t], t = len(x) - 2) is told apart
  // from it, and one that stayed put at 2 or more is probed at v, v + 1,
  // v + 2, so the template is not pinned to it.
  size_t value_inputs = 0;
  BackendChoice choice;
  std::string where;
};

// The template, or null with `why` set (the caller then captures `next`).
// `next`: the inputs of the call that would otherwise be captured, one per
// traced placeholder (the first ones when fewer).
std::shared_ptr<const jit::AotTemplate> template_from_probes(const ProbeRequest& r, c10::ArrayRef<at::Tensor> next,
                                                             std::string* why);

// Per input: the first input sharing its storage (itself when none).
std::vector<size_t> storage_groups(c10::ArrayRef<at::Tensor> inputs);

}  // namespace tj::runtime
