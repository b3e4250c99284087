// What the AOT runtime wrapper (runtime_wrapper.cpp) and the size
// templates (aot_template.cpp: aot_generalize, aot_specialize) share: the
// wrapper's plan as the pipeline's steps hold it, one capture kept for
// dynamic shapes, the template made of several, and the rule that decides
// whether a graph is captured jointly with its backward.
#pragma once

#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "compile/aot/plan_compare.h"
#include "compile/aot/runtime_wrapper.h"
#include "compile/aot/size_programs.h"

namespace tj::jit {

// One capture: its plan (as aot_compile's function runs it) and the
// functional graph as captured, before the backend's passes: the forward
// graph, or with grad the joint one (primals, then tangents).
struct AotPoint {
  std::shared_ptr<const aot_rt::Plan> plan;
  std::shared_ptr<const graph::Graph> captured;
};

struct AotTemplate {
  std::shared_ptr<const aot_rt::Plan> plan;      // every point's, but for `original`, the compiled graphs and the geometries
  graph::aot::SizeTemplate captured;             // with grad: the joint graph, its tangents derived from the primals
  std::vector<aot_rt::GeometryForm> geometries;  // geometries_of(plan)'s, as size forms
  // One backend program per graph for every size (aot_programs.h).
  std::shared_ptr<AllSizePrograms> programs = std::make_shared<AllSizePrograms>();
};

struct AotPlan {
  std::shared_ptr<aot_rt::Plan> plan;
};

// What decides whether a graph is captured jointly with its backward: its
// grad regions, the caller's grad mode, and whether an input requires grad.
// aot_compile captures by it, and aot_specialize serves a size from a
// template only when it gives what the template's captures had.
struct CaptureMode {
  // `with torch.enable_grad():` inside a frame compiled under no_grad still
  // differentiates its region.
  bool enables_grad = false;
  // Under grad mode, a graph whose every op ran under no_grad records no
  // history in eager: it is captured for inference, so inputs that require
  // grad may be written (an optimizer's parameters) as eager writes them.
  bool no_grad_throughout = false;
  bool records_grad = false;  // eager would record autograd history for these ops
  bool joint = false;         // ... and an input requires grad: capture the backward too
};

CaptureMode capture_mode(bool enables_grad, bool no_grad_throughout, bool grad_enabled,
                         c10::ArrayRef<at::Tensor> inputs);

}  // namespace tj::jit
