// Probe captures for AOT size templates; see size_probes.h.
#include "runtime/size_probes.h"

#include <algorithm>
#include <unordered_map>

#include <ATen/ExpandUtils.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty_strided.h>
#include <c10/util/Exception.h>

#include "compile/pipeline.h"
#include "graph/meta_infer.h"
#include "graph/sym_ints.h"
#include "graph/unbacked_sizes.h"
#include "jit/backend.h"
#include "runtime/cpp_errors.h"
#include "runtime/runtime_state.h"
#include "support/log.h"
#include "support/py_gil.h"

namespace tj::runtime {

namespace {

constexpr int kProbes = 3;
// A probe's input may have at most this many times the elements of the
// larger of the two real sizes (plus a little): its memory is never
// touched, but an op without a meta kernel is run on zero-filled tensors
// of its size by the capture (compile/aot/proxy.h).
constexpr int64_t kMostGrowth = 64;
constexpr int64_t kLargestProbeDim = int64_t{1} << 31;

int64_t numel_of(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes)
    if (__builtin_mul_overflow(n, s, &n)) return -1;
  return n;
}

// Each input's sizes at probe k (1-based), or why there is none.
std::string probe_sizes(const std::vector<std::vector<int64_t>>& first, const std::vector<std::vector<int64_t>>& first_strides,
                        c10::ArrayRef<at::Tensor> next, int k,
                        std::vector<std::vector<int64_t>>* out, bool* any_differs) {
  out->clear();
  for (size_t i = 0; i < next.size(); ++i) {
    const std::vector<int64_t> b = next[i].sizes().vec();
    const std::vector<int64_t>& a = first[i];
    if (a.size() != b.size()) return "input " + std::to_string(i) + "'s rank differs";
    std::vector<int64_t> p = b;
    for (size_t d = 0; d < b.size(); ++d) {
      if (a[d] == b[d]) continue;
      if (a[d] < 2 || b[d] < 2) return "dim " + std::to_string(d) + " of input " + std::to_string(i) + " is 0 or 1";
      *any_differs = true;
      p[d] = std::max(a[d], b[d]) + k * (a[d] > b[d] ? a[d] - b[d] : b[d] - a[d]);
      if (p[d] > kLargestProbeDim) return "a probe size would be too large";
    }
    if (p != b) {
      // a probe is laid out as the first capture's and the new call's inputs
      // (dense, in the same order of strides: nonzero's transposed result)
      if (!next[i].is_non_overlapping_and_dense() || next[i].storage_offset() != 0 ||
          i >= first_strides.size() || at::infer_dense_strides(a, next[i].strides()) != first_strides[i])
        return "input " + std::to_string(i) + ", whose sizes change, is not dense at offset 0 as at the first capture";
      const int64_t most = std::max(numel_of(a), numel_of(b));
      const int64_t n = numel_of(p);
      if (most < 0 || n < 0 || n > kMostGrowth * most + 4096) return "a probe size would be too large";
    }
    out->push_back(std::move(p));
  }
  return "";
}

// The tensors of a probe: fresh uninitialized ones where the sizes change,
// laid out as the new call's
// (the capture reads only their metadata), the real ones elsewhere.
std::vector<at::Tensor> probe_tensors(c10::ArrayRef<at::Tensor> next, const std::vector<std::vector<int64_t>>& sizes) {
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < next.size(); ++i) {
    if (next[i].sizes().vec() == sizes[i]) {
      out.push_back(next[i]);
      continue;
    }
    at::Tensor t = at::empty_strided(sizes[i], at::infer_dense_strides(sizes[i], next[i].strides()),
                                     next[i].options().requires_grad(false));
    if (next[i].requires_grad()) t.requires_grad_(true);
    out.push_back(std::move(t));
  }
  return out;
}

// The traced graph at the probe's sizes (metas inferred, size nodes
// folded), or why not.
std::string graph_at(const ProbeRequest& r, const std::vector<at::Tensor>& inputs, std::shared_ptr<graph::Graph>* out) {
  std::shared_ptr<graph::Graph> g = r.traced->clone();
  std::vector<graph::Node*> placeholders = g->placeholders();
  for (size_t i = 0; i < placeholders.size() && i < inputs.size(); ++i) {
    graph::TensorMeta m;
    if (r.metas_of_inputs) {
      m = graph::TensorMeta::of(inputs[i]);
      m.storage_id = g->new_storage_id();  // the inputs share no storage (checked)
    } else {
      const graph::TensorMeta* traced = placeholders[i]->meta().tensor();
      if (!traced) continue;
      m = *traced;
      m.sizes = inputs[i].sizes().vec();
      m.strides = inputs[i].strides().vec();
      m.storage_offset = inputs[i].storage_offset();
    }
    placeholders[i]->meta().set_tensor(m);
  }
  Status inferred = ok_status();
  if (!run_as_torch_binding([&] { inferred = graph::infer_meta_all(*g); }) || !inferred.ok()) {
    PyErr_Clear();
    return "the shapes do not hold at a probe's sizes (" + (inferred.ok() ? std::string("an error") : inferred.error().message) + ")";
  }
  if (graph::first_unbacked_node(*g)) return "the graph has data-dependent sizes";
  if (graph::has_sym_nodes(*g))
    if (auto st = graph::fold_sym_nodes(*g); !st) return "its size nodes do not fold at a probe's sizes (" + st.error().message + ")";
  *out = std::move(g);
  return "";
}

std::string describe(const std::vector<std::vector<int64_t>>& sizes) {
  std::string out;
  for (const auto& s : sizes) out += (out.empty() ? "" : " ") + c10::str(c10::IntArrayRef(s));
  return out;
}

}  // namespace

std::shared_ptr<const jit::AotTemplate> template_from_probes(const ProbeRequest& r, c10::ArrayRef<at::Tensor> next,
                                                             std::string* why) {
  const jit::Backend* backend = r.choice.python_callable ? nullptr : jit::find_backend(r.choice.name);
  if (!backend || !backend->functional) {
    *why = "the backend does not run AOT";
    return nullptr;
  }
  if (!r.first || !r.boundary || r.first_sizes.size() < next.size()) {
    *why = "no first capture to probe from";
    return nullptr;
  }
  for (size_t i = 0; i < next.size(); ++i)
    for (size_t j = i + 1; j < next.size(); ++j)
      if (!next[i].has_storage() || !next[j].has_storage() || next[i].storage().is_alias_of(next[j].storage())) {
        *why = "inputs share memory";
        return nullptr;
      }
  std::vector<std::shared_ptr<const jit::AotPoint>> points{r.first};
  std::string sizes_probed;
  for (int k = 1; k <= kProbes; ++k) {
    std::vector<std::vector<int64_t>> sizes;
    bool any_differs = false;
    if (std::string no = probe_sizes(r.first_sizes, r.first_strides, next, k, &sizes, &any_differs); !no.empty() || !any_differs) {
      *why = no.empty() ? "no size differs" : no;
      return nullptr;
    }
    std::vector<at::Tensor> inputs = probe_tensors(next, sizes);
    std::shared_ptr<graph::Graph> g;
    if (std::string no = graph_at(r, inputs, &g); !no.empty()) {
      *why = no;
      return nullptr;
    }
    compile::Request request;
    request.graph = std::move(g);
    request.example_inputs = std::move(inputs);
    request.backend = backend;
    request.where = r.where;
    request.grad_enabled = at::GradMode::is_enabled();
    bump(Counter::aot_size_probes);
    Expected<compile::Probe> probe = Error{""};
    {
      ReleasedGil released;
      probe = compile::capture_probe(request);
    }
    if (!probe) {
      *why = "the probe at sizes " + describe(sizes) + " fails: " + probe.error().message;
      return nullptr;
    }
    if (probe->boundary->extra_outputs != r.boundary->extra_outputs || probe->boundary->fixes != r.boundary->fixes) {
      *why = "the outputs AOT's boundary adds or fixes differ at the probe's sizes " + describe(sizes);
      return nullptr;
    }
    points.push_back(probe->point);
    sizes_probed += (sizes_probed.empty() ? "" : ", ") + describe(sizes);
  }
  auto made = jit::aot_generalize(points);
  if (!made) {
    *why = "no template from the capture and the probes at " + sizes_probed + ": " + made.error().message;
    return nullptr;
  }
  TJ_LOG(dynamic, "{}: AOT size template from its capture at {} and {} probes at {} (no capture of {})", r.where,
         describe(r.first_sizes), kProbes, sizes_probed, describe([&] {
           std::vector<std::vector<int64_t>> s;
           for (const at::Tensor& t : next) s.push_back(t.sizes().vec());
           return s;
         }()));
  return std::move(*made);
}

}  // namespace tj::runtime
