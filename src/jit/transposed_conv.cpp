// Transposed convolutions through ATen's plain-convolution (mkldnn) path:
// the choice at lowering and the calls at run time (transposed_conv.h).
#include "jit/transposed_conv.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <ATen/record_function.h>

#include "graph/op_registry.h"
#include "support/log.h"

namespace tj::jit::tconv {
namespace {

bool enabled() {
  static const bool on = [] {
    const char* v = std::getenv("TRACEJIT_TCONV");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

std::string name_of(const graph::Node& n) {
  return n.kind() == graph::NodeKind::call_function && n.op() ? n.op()->qualified_name() : std::string();
}

bool f32_4d_contiguous(const graph::TensorMeta* m) {
  return m && m->dtype == at::kFloat && m->sizes.size() == 4 &&
         m->strides == graph::TensorMeta::contiguous(m->sizes, m->dtype).strides;
}

bool f32_4d_node(const graph::Arg& a) { return a.is_node() && f32_4d_contiguous(a.node()->meta().tensor()); }

// A tensor this rewrite takes: a contiguous float32 CPU tensor of 4 dims
// that autograd would not record through.
bool takes(const at::Tensor& t, bool contiguous = true) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == at::kFloat && t.dim() == 4 &&
         t.layout() == at::kStrided && (!contiguous || t.is_contiguous()) &&
         !(t.requires_grad() && at::GradMode::is_enabled());
}

bool pair(const c10::IValue& v, std::vector<int64_t>* out) {
  if (!v.isIntList()) return false;
  *out = v.toIntVector();
  return out->size() == 2;
}

struct Params {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  int64_t groups = 0;
};

// Reads stride, padding, dilation, transposed, output_padding and groups
// from `stack` starting at `first`; false unless they are a 2-d transposed
// convolution's with groups 1.
bool params(const std::vector<c10::IValue>& stack, size_t first, Params* p) {
  if (stack.size() < first + 6 || !pair(stack[first], &p->stride) || !pair(stack[first + 1], &p->padding) ||
      !pair(stack[first + 2], &p->dilation) || !stack[first + 3].isBool() || !stack[first + 3].toBool() ||
      !pair(stack[first + 4], &p->output_padding) || !stack[first + 5].isInt())
    return false;
  p->groups = stack[first + 5].toInt();
  return p->groups == 1;
}

std::optional<c10::IValue> forward(const std::vector<c10::IValue>& stack) {
  Params p;
  if (stack.size() != 9 || !stack[0].isTensor() || !stack[1].isTensor() || !params(stack, 3, &p)) return std::nullopt;
  const at::Tensor& x = stack[0].toTensor();
  const at::Tensor& w = stack[1].toTensor();
  if (!takes(x) || !takes(w) || x.size(1) != w.size(0)) return std::nullopt;
  at::Tensor bias;
  if (!stack[2].isNone()) {
    if (!stack[2].isTensor()) return std::nullopt;
    bias = stack[2].toTensor();
    if (!bias.defined() || bias.dim() != 1 || bias.scalar_type() != at::kFloat || !bias.device().is_cpu() ||
        bias.size(0) != w.size(1) || (bias.requires_grad() && at::GradMode::is_enabled()))
      return std::nullopt;
  }
  std::vector<int64_t> out_sizes = {x.size(0), w.size(1)};
  for (int d = 0; d < 2; ++d) {
    const int64_t s = p.stride[d], pad = p.padding[d], dil = p.dilation[d], op = p.output_padding[d];
    if (s <= 0 || pad < 0 || dil <= 0 || op < 0 || (op >= s && op >= dil)) return std::nullopt;  // ATen's error
    const int64_t o = (x.size(d + 2) - 1) * s - 2 * pad + dil * (w.size(d + 2) - 1) + op + 1;
    if (o <= 0) return std::nullopt;
    out_sizes.push_back(o);
  }
  if (x.numel() == 0 || w.numel() == 0) return std::nullopt;
  RECORD_FUNCTION("tj::transposed conv forward", c10::ArrayRef<const c10::IValue>{});
  // only the shape of the plain convolution's input is read
  const at::Tensor shape_of_y = at::empty(out_sizes, x.options());
  at::Tensor y = std::get<0>(at::convolution_backward(x, shape_of_y, w, c10::nullopt, p.stride, p.padding, p.dilation,
                                                      false, {0, 0}, 1, {true, false, false}));
  if (!y.defined() || y.sizes() != c10::IntArrayRef(out_sizes)) return std::nullopt;
  if (!y.is_contiguous()) y = y.contiguous();
  if (bias.defined()) y.add_(bias.view({1, -1, 1, 1}));
  return c10::IValue(std::move(y));
}

std::optional<c10::IValue> backward(const std::vector<c10::IValue>& stack) {
  Params p;
  if (stack.size() != 11 || !stack[0].isTensor() || !stack[1].isTensor() || !stack[2].isTensor() ||
      !params(stack, 4, &p) || !stack[10].isBoolList())
    return std::nullopt;
  const c10::List<bool> mask_list = stack[10].toBoolList();
  if (mask_list.size() != 3) return std::nullopt;
  const std::array<bool, 3> mask = {mask_list.get(0), mask_list.get(1), mask_list.get(2)};
  const at::Tensor& gy = stack[0].toTensor();
  const at::Tensor& x = stack[1].toTensor();
  const at::Tensor& w = stack[2].toTensor();
  if (!takes(gy, false) || !takes(x) || !takes(w) || x.size(1) != w.size(0) || gy.size(0) != x.size(0) ||
      gy.size(1) != w.size(1) || x.numel() == 0 || w.numel() == 0 || gy.numel() == 0)
    return std::nullopt;
  for (int d = 0; d < 2; ++d) {  // gy's spatial sizes are the transposed convolution's output's
    const int64_t s = p.stride[d], pad = p.padding[d], dil = p.dilation[d], op = p.output_padding[d];
    if (s <= 0 || pad < 0 || dil <= 0 || op < 0 || (op >= s && op >= dil) ||
        gy.size(d + 2) != (x.size(d + 2) - 1) * s - 2 * pad + dil * (w.size(d + 2) - 1) + op + 1)
      return std::nullopt;
  }
  RECORD_FUNCTION("tj::transposed conv backward", c10::ArrayRef<const c10::IValue>{});
  at::Tensor gx, gw, gb;
  if (mask[0]) {
    gx = at::convolution(gy, w, c10::nullopt, p.stride, p.padding, p.dilation, false, {0, 0}, 1);
    if (gx.sizes() != x.sizes()) return std::nullopt;
    if (!gx.is_contiguous()) gx = gx.contiguous();
  }
  if (mask[1]) {
    gw = std::get<1>(at::convolution_backward(x, gy, w, c10::nullopt, p.stride, p.padding, p.dilation, false, {0, 0},
                                              1, {false, true, false}));
    if (gw.sizes() != w.sizes()) return std::nullopt;
    if (!gw.is_contiguous()) gw = gw.contiguous();
  }
  if (mask[2]) gb = gy.sum({0, 2, 3});
  return c10::IValue(c10::ivalue::Tuple::create({c10::IValue(std::move(gx)), c10::IValue(std::move(gw)),
                                                 c10::IValue(std::move(gb))}));
}

}  // namespace

Form form_of(const graph::Node& n) {
  if (!enabled() || n.kind() != graph::NodeKind::call_function || !n.op() || n.meta().tags.grad_enabled.value_or(false))
    return Form::none;
  const std::string name = name_of(n);
  const auto& a = n.args();
  if (name == "aten::convolution") {
    if (a.size() != 9 || !a[6].is<bool>() || !a[6].as<bool>() || !a[8].is<int64_t>() || a[8].as<int64_t>() != 1 ||
        !f32_4d_node(a[0]) || !f32_4d_node(a[1]) || !f32_4d_contiguous(n.meta().tensor()))
      return Form::none;
    // measured (one thread): ATen's generic path wins for few output channels (64 -> 3: 3.8 against 7.7 ms)
    return n.meta().tensor()->sizes[1] >= 16 ? Form::forward : Form::none;
  }
  if (name == "aten::convolution_backward") {
    if (a.size() != 11 || !a[7].is<bool>() || !a[7].as<bool>() || !a[9].is<int64_t>() || a[9].as<int64_t>() != 1 ||
        !a[0].is_node() || !f32_4d_node(a[1]) || !f32_4d_node(a[2]))
      return Form::none;
    return Form::backward;
  }
  return Form::none;
}

std::optional<c10::IValue> run(Form form, const graph::Node& node, const graph::detail::ValueOf& value_of) {
  auto stack = graph::detail::box_arguments(node, value_of);
  if (!stack) return std::nullopt;
  std::optional<c10::IValue> out = form == Form::forward ? forward(*stack) : backward(*stack);
  if (!out) TJ_LOG(perf, "llvm backend: {}: the transposed convolution runs as ATen's op (its tensors at this call)",
                   node.name());
  return out;
}

}  // namespace tj::jit::tconv
