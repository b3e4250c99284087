// Probe captures for AOT size templates; see size_probes.h.
#include "runtime/size_probes.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>

#include <ATen/ExpandUtils.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty_strided.h>
#include <c10/util/Exception.h>

#include "compile/aot/aot_template.h"
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
std::string probe_sizes(const ProbeRequest& r, c10::ArrayRef<at::Tensor> next, const std::vector<bool>& grouped, int k,
                        std::vector<std::vector<int64_t>>* out, bool* any_differs) {
  const std::vector<std::vector<int64_t>>& first = r.first_sizes;
  const std::vector<std::vector<int64_t>>& first_strides = r.first_strides;
  out->clear();
  for (size_t i = 0; i < next.size(); ++i) {
    const std::vector<int64_t> b = next[i].sizes().vec();
    const std::vector<int64_t>& a = first[i];
    if (a.size() != b.size()) return "input " + std::to_string(i) + "'s rank differs";
    const bool value = i + r.value_inputs >= next.size() && b.size() == 2 && b[1] == 0;
    std::vector<int64_t> p = b;
    for (size_t d = 0; d < b.size(); ++d) {
      if (value && d == 0 && a[0] == b[0] && b[0] >= 2) {
        p[0] = b[0] + (k - 1);  // a value that stayed put: v, v + 1, v + 2
        continue;
      }
      if (a[d] == b[d]) continue;
      if (a[d] < 2 || b[d] < 2) return "dim " + std::to_string(d) + " of input " + std::to_string(i) + " is 0 or 1";
      *any_differs = true;
      // a value a step behind the input sizes (k - 1): told apart from an input size it moves with
      p[d] = std::max(a[d], b[d]) + (value ? k - 1 : k) * (a[d] > b[d] ? a[d] - b[d] : b[d] - a[d]);
      if (p[d] > kLargestProbeDim) return "a probe size would be too large";
    }
    if (p != b) {
      // a probe is laid out as the first capture's and the new call's inputs
      // (dense, in the same order of strides: nonzero's transposed result)
      // (inputs that share memory: laid out by group_views)
      if (!grouped[i] && (!next[i].is_non_overlapping_and_dense() || next[i].storage_offset() != 0 ||
                          i >= first_strides.size() || at::infer_dense_strides(a, next[i].strides()) != first_strides[i]))
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

// A stride or offset of an input that shares memory: `va` at the first
// capture, `vb` now, at the probe's sizes: a multiple of the change of a
// size that changes with it (cols's offset, the count); nullopt when no
// size explains it or two give different values.
std::optional<int64_t> extrapolate(int64_t va, int64_t vb, const ProbeRequest& r, c10::ArrayRef<at::Tensor> next,
                                   const std::vector<std::vector<int64_t>>& probe) {
  if (va == vb) return vb;
  std::optional<int64_t> out;
  for (size_t j = 0; j + r.value_inputs < next.size(); ++j)  // not the values (probed a step behind)
    for (size_t d = 0; d < probe[j].size(); ++d) {
      const int64_t sa = r.first_sizes[j][d];
      const int64_t sb = next[j].size(static_cast<int64_t>(d));
      if (sa == sb || (vb - va) % (sb - sa) != 0) continue;
      const int64_t v = va + (vb - va) / (sb - sa) * (probe[j][d] - sa);
      if (out && *out != v) return std::nullopt;
      out = v;
    }
  return out;
}

// Each group of inputs that share memory, as views of one fresh tensor at
// the probe's sizes with strides and offsets extrapolated (`out`: the
// probe's tensors, its members replaced), or why not.
std::string group_views(const ProbeRequest& r, c10::ArrayRef<at::Tensor> next, const std::vector<size_t>& groups,
                        const std::vector<bool>& grouped, const std::vector<std::vector<int64_t>>& sizes,
                        std::vector<at::Tensor>* out) {
  for (size_t g = 0; g < next.size(); ++g) {
    if (groups[g] != g || !grouped[g]) continue;
    struct View {
      size_t input;
      std::vector<int64_t> strides;
      int64_t offset;
    };
    std::vector<View> views;
    int64_t extent = 0;
    bool changes = false;
    for (size_t i = g; i < next.size(); ++i) {
      if (groups[i] != g) continue;
      if (next[i].requires_grad() || next[i].scalar_type() != next[g].scalar_type())
        return "inputs that share memory require grad or differ in dtype";
      View v{i, {}, 0};
      for (size_t d = 0; d < sizes[i].size(); ++d) {
        auto stride = extrapolate(r.first_strides[i][d], next[i].stride(static_cast<int64_t>(d)), r, next, sizes);
        if (!stride || *stride < 0) return "a stride of input " + std::to_string(i) + ", which shares memory, changes with no size";
        v.strides.push_back(*stride);
      }
      auto offset = extrapolate(r.first_offsets[i], next[i].storage_offset(), r, next, sizes);
      if (!offset || *offset < 0) return "the offset of input " + std::to_string(i) + ", which shares memory, changes with no size";
      v.offset = *offset;
      int64_t end = v.offset + 1;
      for (size_t d = 0; d < sizes[i].size(); ++d) end = sizes[i][d] == 0 ? v.offset : end + (sizes[i][d] - 1) * v.strides[d];
      extent = std::max(extent, end);
      changes = changes || sizes[i] != next[i].sizes().vec() || v.strides != next[i].strides().vec() ||
                v.offset != next[i].storage_offset();
      views.push_back(std::move(v));
    }
    if (!changes) continue;
    const int64_t now = static_cast<int64_t>(next[g].storage().nbytes() / std::max<size_t>(next[g].element_size(), 1));
    if (extent > kMostGrowth * std::max<int64_t>(now, 1) + 4096) return "a probe size would be too large";
    at::Tensor base = at::empty({extent}, next[g].options().requires_grad(false));
    for (const View& v : views) (*out)[v.input] = base.as_strided(sizes[v.input], v.strides, v.offset);
  }
  return "";
}

// The traced graph at the probe's sizes (metas inferred, size nodes
// folded), or why not.
std::string graph_at(const ProbeRequest& r, const std::vector<at::Tensor>& inputs, std::shared_ptr<graph::Graph>* out) {
  std::shared_ptr<graph::Graph> g = r.traced->clone();
  std::vector<graph::Node*> placeholders = g->placeholders();
  std::unordered_map<const void*, int64_t> storage_ids;  // views of one probe tensor share one
  for (size_t i = 0; i < placeholders.size() && i < inputs.size(); ++i) {
    graph::TensorMeta m;
    if (r.metas_of_inputs) {
      m = graph::TensorMeta::of(inputs[i]);
      const void* storage = inputs[i].storage().unsafeGetStorageImpl();
      auto it = storage_ids.find(storage);
      m.storage_id = it != storage_ids.end() ? it->second : storage_ids[storage] = g->new_storage_id();
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

// What the probes share: the request, the new call's inputs, how they share memory.
struct Probing {
  const ProbeRequest& r;
  c10::ArrayRef<at::Tensor> next;
  const jit::Backend* backend;
  std::vector<size_t> groups;
  std::vector<bool> grouped;
  bool any_grouped = false;
};

// The capture at the probe `sizes` (per input), or why there is none.
std::string run_probe(const Probing& pr, const std::vector<std::vector<int64_t>>& sizes,
                      std::shared_ptr<const jit::AotPoint>* out) {
  const ProbeRequest& r = pr.r;
  std::vector<at::Tensor> inputs = probe_tensors(pr.next, sizes);
  if (std::string no = pr.any_grouped ? group_views(r, pr.next, pr.groups, pr.grouped, sizes, &inputs) : "";
      !no.empty())
    return no;
  std::shared_ptr<graph::Graph> g;
  if (std::string no = graph_at(r, inputs, &g); !no.empty()) return no;
  compile::Request request;
  request.graph = std::move(g);
  request.example_inputs = std::move(inputs);
  request.backend = pr.backend;
  request.where = r.where;
  request.grad_enabled = at::GradMode::is_enabled();
  bump(Counter::aot_size_probes);
  Expected<compile::Probe> probe = Error{""};
  {
    ReleasedGil released;
    probe = compile::capture_probe(request);
  }
  if (!probe) return "the probe at sizes " + describe(sizes) + " fails: " + probe.error().message;
  if (probe->boundary->extra_outputs != r.boundary->extra_outputs || probe->boundary->fixes != r.boundary->fixes)
    return "the outputs AOT's boundary adds or fixes differ at the probe's sizes " + describe(sizes);
  *out = probe->point;
  return "";
}

// Class `c`'s dims in `out` (per input) set to `size`; false when a dim is
// no input's (a synthetic base) or the size too large.
bool set_class(const jit::AotTemplate& made, size_t c, int64_t size, std::vector<std::vector<int64_t>>& out) {
  if (size > kLargestProbeDim) return false;
  for (const graph::aot::SizeVar& var : jit::aot_template_graph(made).classes[c]) {
    // the captured graph's placeholders are the plan's unique inputs
    const auto u = static_cast<size_t>(var.placeholder);
    if (u >= made.plan->inputs.size() || made.plan->inputs[u].synthetic_base) return false;
    const auto i = static_cast<size_t>(made.plan->inputs[u].position);
    if (i >= out.size() || static_cast<size_t>(var.dim) >= out[i].size()) return false;
    out[i][static_cast<size_t>(var.dim)] = size;
  }
  return true;
}

// `sizes`, unless an input's would grow too much (as probe_sizes limits it).
std::optional<std::vector<std::vector<int64_t>>> within_growth(std::vector<std::vector<int64_t>> sizes,
                                                               const std::vector<std::vector<int64_t>>& last,
                                                               c10::ArrayRef<at::Tensor> next) {
  for (size_t i = 0; i < sizes.size() && i < next.size(); ++i) {
    const int64_t n = numel_of(sizes[i]), was = numel_of(next[i].sizes().vec());
    if (n < 0 || was < 0 || n > kMostGrowth * std::max(numel_of(last[i]), was) + 4096) return std::nullopt;
  }
  return sizes;
}

// Sizes at which every order the template's classes kept at each point
// (SizeTemplate::orders) is reversed, each class moved on its probes'
// steps (the largest at the last probe to its first probe's size, each
// smaller one to its first step past the one before), or none when a size
// would be too large.
std::optional<std::vector<std::vector<int64_t>>> reversing_sizes(const jit::AotTemplate& made,
                                                                 const std::vector<std::vector<int64_t>>& last,
                                                                 c10::ArrayRef<at::Tensor> next) {
  const graph::aot::SizeTemplate& t = jit::aot_template_graph(made);
  std::vector<size_t> by_size(t.classes.size());
  for (size_t c = 0; c < by_size.size(); ++c) by_size[c] = c;
  std::sort(by_size.begin(), by_size.end(),
            [&](size_t x, size_t y) { return t.class_values[x].back() > t.class_values[y].back(); });
  std::vector<std::vector<int64_t>> out = last;
  int64_t before = 0;
  for (size_t c : by_size) {
    const std::vector<int64_t>& v = t.class_values[c];  // the capture, then the probes
    if (v.size() < 3) return std::nullopt;
    const int64_t first = v[1], step = v[2] - v[1];
    if (step <= 0) return std::nullopt;
    const int64_t k = before < first ? 0 : (before - first) / step + 1;
    before = first + k * step;
    if (!set_class(made, c, before, out)) return std::nullopt;
  }
  return within_growth(std::move(out), last, next);
}

// Sizes at which each class the template bounds by a fixed size
// (SizeTemplate::bounds) is on the other side of it, on its probes' steps:
// `up`, past the largest it stayed under; else under the smallest it stayed
// over (2 at least). None when no class moves or a size would be too large.
std::optional<std::vector<std::vector<int64_t>>> crossing_sizes(const jit::AotTemplate& made,
                                                                const std::vector<std::vector<int64_t>>& last,
                                                                c10::ArrayRef<at::Tensor> next, bool up) {
  const graph::aot::SizeTemplate& t = jit::aot_template_graph(made);
  std::vector<std::vector<int64_t>> out = last;
  bool moved = false;
  for (size_t c = 0; c < t.classes.size(); ++c) {
    int64_t over = -1, under = std::numeric_limits<int64_t>::max();
    for (const auto& b : t.bounds)
      if (static_cast<size_t>(b.cls) == c) (b.above ? under = std::min(under, b.size) : over = std::max(over, b.size));
    const std::vector<int64_t>& v = t.class_values[c];
    if ((up ? over < 0 : under == std::numeric_limits<int64_t>::max()) || v.size() < 3 || v[2] <= v[1]) continue;
    const int64_t first = v[1], step = v[2] - v[1];
    const int64_t size = up ? first + ((over - first) / step + 1) * step : first - ((first - under) / step + 1) * step;
    if (size < 2) continue;
    if (!set_class(made, c, size, out)) return std::nullopt;
    moved = true;
  }
  if (!moved) return std::nullopt;
  return within_growth(std::move(out), last, next);
}

// One more probe at `sizes` (none: why in `no`): when the template's fit
// holds there too, the template made with that point replaces `made`.
void try_probe(const Probing& pr, const std::optional<std::vector<std::vector<int64_t>>>& sizes, const char* what,
               std::vector<std::shared_ptr<const jit::AotPoint>>& points, std::shared_ptr<const jit::AotTemplate>* made) {
  std::shared_ptr<const jit::AotPoint> point;
  std::string no = sizes ? run_probe(pr, *sizes, &point) : "no probe size for it";
  if (no.empty()) {
    points.push_back(std::move(point));
    auto again = jit::aot_generalize(points);
    if (again) {
      TJ_LOG(dynamic, "{}: the AOT size template's fit holds at the probe {} too, which {}", pr.r.where,
             describe(*sizes), what);
      *made = std::move(*again);
      return;
    }
    points.pop_back();
    no = again.error().message;
  }
  TJ_LOG(dynamic, "{}: the AOT size template serves only sizes that keep what its points kept ({}: {})", pr.r.where,
         what, no);
}

// The orders and bounds a template's points all kept (sizes that break
// them are not served) tested by probes that break them: a fit that holds
// there too does not rely on them.
void test_guards(const Probing& pr, const std::vector<std::vector<int64_t>>& last,
                 std::vector<std::shared_ptr<const jit::AotPoint>> points,
                 std::shared_ptr<const jit::AotTemplate>* made) {
  if (!jit::aot_template_graph(**made).orders.empty() || !jit::aot_template_graph(**made).weak_orders.empty())
    try_probe(pr, reversing_sizes(**made, last, pr.next), "reverses the order of its sizes", points, made);
  for (bool up : {true, false})
    if (!jit::aot_template_graph(**made).bounds.empty())
      try_probe(pr, crossing_sizes(**made, last, pr.next, up),
                up ? "moves its sizes above the fixed ones" : "moves its sizes below the fixed ones", points, made);
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
  for (const at::Tensor& t : next)
    if (!t.has_storage()) {
      *why = "an input has no storage";
      return nullptr;
    }
  Probing pr{r, next, backend, storage_groups(next), std::vector<bool>(next.size(), false)};
  for (size_t i = 0; i < next.size(); ++i)
    if (pr.groups[i] != i) pr.grouped[i] = pr.grouped[pr.groups[i]] = true;
  pr.any_grouped = std::find(pr.grouped.begin(), pr.grouped.end(), true) != pr.grouped.end();
  if (pr.any_grouped && (!r.metas_of_inputs || r.first_alias != pr.groups || r.first_offsets.size() < next.size() ||
                         r.first_strides.size() < next.size())) {
    *why = "inputs share memory (and did not at the first capture as now)";
    return nullptr;
  }
  std::vector<std::shared_ptr<const jit::AotPoint>> points{r.first};
  std::string sizes_probed;
  std::vector<std::vector<int64_t>> sizes;
  for (int k = 1; k <= kProbes; ++k) {
    bool any_differs = false;
    if (std::string no = probe_sizes(r, next, pr.grouped, k, &sizes, &any_differs); !no.empty() || !any_differs) {
      *why = no.empty() ? "no size differs" : no;
      return nullptr;
    }
    std::shared_ptr<const jit::AotPoint> point;
    if (std::string no = run_probe(pr, sizes, &point); !no.empty()) {
      *why = no;
      return nullptr;
    }
    points.push_back(std::move(point));
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
  std::shared_ptr<const jit::AotTemplate> out = std::move(*made);
  test_guards(pr, sizes, std::move(points), &out);
  return out;
}

std::vector<size_t> storage_groups(c10::ArrayRef<at::Tensor> inputs) {
  std::vector<size_t> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    size_t g = i;
    for (size_t j = 0; j < i && g == i; ++j)
      if (inputs[i].has_storage() && inputs[j].has_storage() && inputs[i].storage().is_alias_of(inputs[j].storage()))
        g = out[j];
    out.push_back(g);
  }
  return out;
}

}  // namespace tj::runtime
