// Shapes and layouts of the oneDNN steps (onednn_geometry.h): channels-last
// and contiguous strides, reorders between layouts, and ATen's convolution
// rules (output sizes, the weight's geometry as oneDNN describes it).
#include "jit/onednn_geometry.h"

#include <algorithm>

#include <ATen/ops/empty_strided.h>
#include <ATen/record_function.h>

#include "jit/onednn_memory.h"

namespace tj::jit::onednn {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

// Strides of a channels-last (nwc / nhwc / ndhwc) tensor of these sizes.
std::vector<int64_t> channels_last_strides(c10::IntArrayRef sizes) {
  const size_t r = sizes.size();
  std::vector<int64_t> st(r);
  int64_t acc = 1;
  st[1] = acc;
  acc *= sizes[1];
  for (size_t d = r - 1; d >= 2; --d) {
    st[d] = acc;
    acc *= sizes[d];
  }
  st[0] = acc;
  return st;
}

std::vector<int64_t> contiguous_strides(c10::IntArrayRef sizes) {
  std::vector<int64_t> st(sizes.size(), 1);
  for (size_t d = sizes.size() - 1; d > 0; --d) st[d - 1] = st[d] * sizes[d];
  return st;
}

memory::format_tag channels_last_tag(size_t rank) { return rank == 3 ? tag::nwc : rank == 4 ? tag::nhwc : tag::ndhwc; }

// `t` laid out with `strides` (a oneDNN reorder; `t` itself when it already is).
at::Tensor relaid(const at::Tensor& t, c10::IntArrayRef strides, dnnl::stream& s) {
  if (same_layout(t, strides)) return t;
  RECORD_FUNCTION("tj::onednn reorder", c10::ArrayRef<const c10::IValue>{});
  at::Tensor out = at::empty_strided(t.sizes(), strides, t.options());
  memory from = wrap(strided_md(t), t), to = wrap(strided_md(out), out);
  dnnl::reorder(from, to).execute(s, from, to);
  return out;
}

// Whether ATen would take these convolution arguments; the output sizes.
bool conv_shapes(const Plan& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor* bias,
                 std::vector<int64_t>* out, std::string* why) {
  const int64_t rank = x.dim(), g = p.groups;
  const int64_t in_ch = x.size(1);
  const int64_t out_ch = p.transposed ? w.size(1) * g : w.size(0);
  const bool channels_ok = p.transposed ? (w.size(0) == in_ch && in_ch % g == 0)
                                        : (w.size(1) * g == in_ch && w.size(0) % g == 0);
  if (w.dim() != rank || !channels_ok || (bias && (bias->dim() != 1 || bias->size(0) != out_ch))) {
    *why = "input, weight and bias shapes do not agree";
    return false;
  }
  out->assign({x.size(0), out_ch});
  for (int64_t d = 0; d < rank - 2; ++d) {
    const int64_t i = x.size(d + 2), k = w.size(d + 2), s = p.stride[d], pad = p.padding[d], dil = p.dilation[d];
    if (s <= 0 || pad < 0 || dil <= 0 || (p.transposed && (p.output_padding[d] < 0 ||
                                                             p.output_padding[d] >= std::max(s, dil)))) {
      *why = "stride, padding or dilation out of range";
      return false;
    }
    const int64_t o = p.transposed ? (i - 1) * s - 2 * pad + dil * (k - 1) + p.output_padding[d] + 1
                                   : (i + 2 * pad - dil * (k - 1) - 1) / s + 1;
    if (o <= 0 || (!p.transposed && i + 2 * pad < dil * (k - 1) + 1)) {
      *why = "the output would be empty";
      return false;
    }
    out->push_back(o);
  }
  if (x.size(0) == 0 || in_ch == 0 || out_ch == 0) {
    *why = "an empty tensor";
    return false;
  }
  return true;
}

// ATen's weight geometry as oneDNN's ([G,] OC, IC, k...), described by its own strides.
memory::desc conv_weight_md(const Plan& p, const at::Tensor& w) {
  const int64_t g = p.groups, rank = w.dim();
  memory::dims dims, strides;
  const int64_t o_dim = p.transposed ? 1 : 0, i_dim = p.transposed ? 0 : 1;
  const int64_t oc = p.transposed ? w.size(1) * g : w.size(0);
  const int64_t ic = p.transposed ? w.size(0) : w.size(1) * g;
  if (g > 1) {
    dims = {g, oc / g, ic / g};
    // the group dim steps over the group's slice of ATen's dim 0
    strides = {w.stride(0) * (p.transposed ? ic / g : oc / g), w.stride(o_dim), w.stride(i_dim)};
  } else {
    dims = {oc, ic};
    strides = {w.stride(o_dim), w.stride(i_dim)};
  }
  for (int64_t d = 2; d < rank; ++d) {
    dims.push_back(w.size(d));
    strides.push_back(w.stride(d));
  }
  return memory::desc(dims, dt::f32, strides);
}

}  // namespace tj::jit::onednn
