// Meta rules: hand-written shape rules for the ops LibTorch 1.13 has no
// (or a wrong) Meta kernel for; the arguments the meta kernels get wrong
// (CPU promotion copies, factory dtypes) are in meta_arguments.cpp; see
// meta_rules.h. Shared by meta
// inference (meta_infer.cpp) and AOT capture.
#include "graph/meta_rules.h"

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <unordered_map>

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/flip.h>
#include <ATen/ops/floor_divide.h>
#include <ATen/ops/result_type.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/GradMode.h>

#include "graph/autograd_function.h"
#include "graph/boxing.h"
#include "graph/meta_rules.h"
#include "graph/sym_ints.h"
#include "graph/op_registry.h"

namespace tj::graph {

namespace {

using detail::promoted_copy;  // meta_arguments.cpp

at::TensorOptions meta_options(c10::ScalarType dtype) {
  return at::TensorOptions().dtype(dtype).device(c10::kMeta);
}

// ---- hand-written rules for ops without a meta kernel ----

using Rule = detail::MetaRule;

// Whether the rule running now is for an op on the CPU (run_meta_rule's on_cpu).
thread_local bool rule_on_cpu = true;

int64_t list_at(const std::vector<int64_t>& v, size_t i) { return v.size() == 1 ? v[0] : v.at(i); }

// Output of a (possibly transposed) convolution; input [N,] C, spatial...
at::Tensor conv_output(const at::Tensor& input, const at::Tensor& weight, const std::vector<int64_t>& stride,
                       const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, bool transposed,
                       const std::vector<int64_t>& output_padding, int64_t groups) {
  int64_t spatial = weight.dim() - 2;
  bool batched = input.dim() == spatial + 2;
  at::Tensor in = batched ? input : input.unsqueeze(0);
  std::vector<int64_t> sizes = {in.size(0), transposed ? weight.size(1) * groups : weight.size(0)};
  for (int64_t d = 0; d < spatial; ++d) {
    int64_t i = in.size(d + 2), k = weight.size(d + 2);
    int64_t s = list_at(stride, d), p = list_at(padding, d), dl = list_at(dilation, d);
    if (transposed)
      sizes.push_back((i - 1) * s - 2 * p + dl * (k - 1) + list_at(output_padding, d) + 1);
    else
      sizes.push_back((i + 2 * p - dl * (k - 1) - 1) / s + 1);
  }
  // ATen 1.13's CPU transposed convolutions (slow_conv_transpose2d/3d, for
  // float too: its mkldnn path takes no transposed one) return a contiguous
  // tensor whatever the input's format; cuDNN's follow the input's.
  auto format = in.dim() == 4 && !(transposed && rule_on_cpu) ? in.suggest_memory_format()
                                                               : at::MemoryFormat::Contiguous;
  at::Tensor out = at::empty(sizes, meta_options(input.scalar_type()), format);
  return batched ? out : out.squeeze(0);
}

// conv_transpose1d/2d/3d: LibTorch's own composite on the meta operands
// (its checks and sizes), laid out contiguously on the CPU as conv_output
// says; its meta run follows the input's memory format.
std::vector<at::Tensor> conv_transpose_output(const char* name, std::vector<c10::IValue> stack) {
  c10::Dispatcher::singleton().findSchemaOrThrow(name, "input").callBoxed(stack);
  at::Tensor out = stack.at(0).toTensor();
  if (rule_on_cpu && !out.is_contiguous()) out = at::empty(out.sizes(), meta_options(out.scalar_type()));
  return {out};
}

// Reduction over `dims` (None or empty: all), as var/std do it.
at::Tensor reduced(const at::Tensor& x, const c10::IValue& dims, bool keepdim) {
  std::vector<int64_t> reduce = dims.isNone() ? std::vector<int64_t>{} : dims.toIntVector();
  std::vector<bool> drop(x.dim(), reduce.empty());
  for (int64_t d : reduce) drop.at(d < 0 ? d + x.dim() : d) = true;
  std::vector<int64_t> sizes;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!drop[d]) sizes.push_back(x.size(d));
    else if (keepdim) sizes.push_back(1);
  }
  return at::empty(sizes, meta_options(c10::toRealValueType(x.scalar_type())));
}

// The output TensorIterator allocates for these inputs (its sizes, and the
// strides that follow the inputs' layout), of this dtype.
at::Tensor iterator_output(const std::vector<at::Tensor>& inputs, c10::ScalarType dtype) {
  at::TensorIteratorConfig config;
  config.check_all_same_dtype(false).add_owned_output(at::empty({0}, meta_options(dtype)));
  for (const at::Tensor& t : inputs) config.add_input(t);
  return config.build().output();
}

// A pointwise op of one tensor (abs of a complex tensor is real).
Rule same_as_input() {
  return [](const std::vector<c10::IValue>& s) {
    const at::Tensor& x = s[0].toTensor();
    return std::vector<at::Tensor>{iterator_output({x}, c10::toRealValueType(x.scalar_type()))};
  };
}

// A reduction along one dim to (values, int64 indices): the dim at stack
// index `dim_at` (default -1), kept as size 1 when `keepdim_at` says so.
Rule select_along_dim(size_t dim_at, size_t keepdim_at) {
  return [dim_at, keepdim_at](const std::vector<c10::IValue>& s) {
    const at::Tensor& x = s[0].toTensor();
    std::vector<int64_t> sizes = x.sizes().vec();
    if (x.dim() > 0) {
      const int64_t dim = c10::maybe_wrap_dim(s.size() > dim_at ? s[dim_at].toInt() : -1, x.dim());
      const bool keepdim = s.size() > keepdim_at && s[keepdim_at].toBool();
      TORCH_CHECK(x.size(dim) > 0, "cannot reduce over an empty dimension");
      if (keepdim) sizes[static_cast<size_t>(dim)] = 1;
      else sizes.erase(sizes.begin() + dim);
    }
    return std::vector<at::Tensor>{at::empty(sizes, meta_options(x.scalar_type())), at::empty(sizes, meta_options(at::kLong))};
  };
}

Rule cumulative_extreme() {
  return [](const std::vector<c10::IValue>& s) {
    const at::Tensor& x = s[0].toTensor();
    return std::vector<at::Tensor>{at::empty(x.sizes(), meta_options(x.scalar_type())), at::empty(x.sizes(), meta_options(at::kLong))};
  };
}

// An index per element of the tensor at stack index `values_at`, int32
// when out_int32 (the argument after the two tensors) is set.
Rule bucket_indices(size_t values_at) {
  return [values_at](const std::vector<c10::IValue>& s) {
    const at::Tensor& v = s[values_at].toTensor();
    const bool int32 = s.size() > 2 && s[2].isBool() && s[2].toBool();
    return std::vector<at::Tensor>{at::empty(v.sizes(), meta_options(int32 ? at::kInt : at::kLong))};
  };
}

// Eager's logical ops promote their operands to a common dtype first
// (TensorIterator's comparison op; see promoted_copy).
Rule logical_binary() {
  return [](const std::vector<c10::IValue>& s) {
    const at::Tensor &a = s[0].toTensor(), &b = s[1].toTensor();
    const c10::ScalarType common = at::result_type(a, b);
    return std::vector<at::Tensor>{iterator_output({promoted_copy(a, common), promoted_copy(b, common)}, at::kBool)};
  };
}

// _embedding_bag(_forward_only)(weight, indices, offsets, scale_grad_by_freq,
// mode, sparse, per_sample_weights, include_last_offset, padding_idx): the
// sizes of the CPU kernel's results (LibTorch 1.13, EmbeddingBag.cpp), which
// the meta function torch's Python registers does not follow (and C++ alone
// has none): output [bags, dim] of the weight's dtype; the others of the
// indices' and offsets' promoted dtype. The `sum` fast path (float/half
// weight with unit column stride, per-sample weights of unit stride, no
// padding index) leaves offset2bag empty; bag_size has one entry per offset
// for `sum` without autograd (`_forward_only`), one per bag otherwise;
// max_indices is [bags, dim] for `max`, bag_size's shape otherwise.
Rule embedding_bag(bool for_autograd) {
  return [for_autograd](const std::vector<c10::IValue>& s) {
    TORCH_CHECK(s.size() >= 9, "_embedding_bag: expected 9 arguments");
    const at::Tensor &weight = s[0].toTensor(), &indices = s[1].toTensor(), &offsets = s[2].toTensor();
    TORCH_CHECK(weight.dim() == 2, "weight has to be a 2D Tensor, but got Tensor of dimension ", weight.dim());
    TORCH_CHECK(indices.dim() == 1 && offsets.dim() == 1, "input has to be a 1D or 2D Tensor");
    for (const at::Tensor* t : {&indices, &offsets})
      TORCH_CHECK(t->scalar_type() == at::kInt || t->scalar_type() == at::kLong,
                  "embedding_bag: indices and offsets must be int32 or int64, got ", t->scalar_type());
    const int64_t mode = s[4].toInt();
    TORCH_CHECK(mode >= 0 && mode <= 2, "embedding_bag: unknown mode ", mode);
    const at::Tensor per_sample = s[6].isTensor() ? s[6].toTensor() : at::Tensor();
    const bool include_last = s[7].toBool();
    const int64_t padding_idx = s[8].toInt();
    constexpr int64_t kSum = 0, kMax = 2;
    const int64_t bags = offsets.size(0) - (include_last ? 1 : 0);
    const bool fast_sum = (weight.scalar_type() == at::kFloat || weight.scalar_type() == at::kHalf) &&
                          weight.stride(1) == 1 && padding_idx < 0 &&
                          (!per_sample.defined() || per_sample.stride(0) == 1);
    std::vector<int64_t> offset2bag{mode == kSum && fast_sum ? 0 : indices.size(0)};
    std::vector<int64_t> bag_size = for_autograd || mode != kSum ? std::vector<int64_t>{bags} : offsets.sizes().vec();
    std::vector<int64_t> max_indices = mode == kMax ? std::vector<int64_t>{bags, weight.size(1)} : bag_size;
    const auto index_options = meta_options(c10::promoteTypes(indices.scalar_type(), offsets.scalar_type()));
    return std::vector<at::Tensor>{at::empty({bags, weight.size(1)}, meta_options(weight.scalar_type())),
                                   at::empty(offset2bag, index_options), at::empty(bag_size, index_options),
                                   at::empty(max_indices, index_options)};
  };
}

// where(condition, self, other) with a number for self, other or both:
// eager's dtype (the numbers' and tensor's result type) and layout.
Rule where_with_numbers() {
  return [](const std::vector<c10::IValue>& s) {
    const at::Tensor& c = s[0].toTensor();
    TORCH_CHECK(c.scalar_type() == at::kBool || c.scalar_type() == at::kByte,
                "where expected condition to be a boolean tensor");
    c10::ScalarType dtype;
    if (s[1].isTensor() && s[2].isTensor()) dtype = at::result_type(s[1].toTensor(), s[2].toTensor());
    else if (s[1].isTensor()) dtype = at::result_type(s[1].toTensor(), s[2].toScalar());
    else if (s[2].isTensor()) dtype = at::result_type(s[1].toScalar(), s[2].toTensor());
    else dtype = at::result_type(s[1].toScalar(), s[2].toScalar());
    auto operand = [&](const c10::IValue& v) { return v.isTensor() ? v.toTensor() : at::empty({}, meta_options(dtype)); };
    return std::vector<at::Tensor>{iterator_output({c, operand(s[1]), operand(s[2])}, dtype)};
  };
}

Rule returns_input() {  // in-place: the result is the (meta) input itself
  return [](const std::vector<c10::IValue>& s) { return std::vector<at::Tensor>{s[0].toTensor()}; };
}

// `rule`, raising eager's error for a bool first argument.
Rule rejects_bool(Rule rule, std::string message) {
  return [rule = std::move(rule), message = std::move(message)](const std::vector<c10::IValue>& s) {
    TORCH_CHECK(s[0].toTensor().scalar_type() != at::kBool, message);
    return rule(s);
  };
}

// var/std(self, dim, correction-or-unbiased, keepdim) and their _mean forms.
Rule variance(bool with_mean) {
  return [with_mean](const std::vector<c10::IValue>& s) {
    at::Tensor v = reduced(s[0].toTensor(), s[1], s[3].toBool());
    if (!with_mean) return std::vector<at::Tensor>{v};
    return std::vector<at::Tensor>{v, at::empty_like(v).to(s[0].toTensor().scalar_type())};
  };
}

// The losses over class indices or probabilities (cross_entropy_loss,
// nll_loss_nd, nll_loss2d): 1.13 has no meta kernel for nll_loss2d_forward,
// which images (N, C, H, W) reach. Eager's shape checks, then the output:
// the target's shape with reduction='none', a scalar otherwise
// (`total_weight` too when asked, for nll_loss2d_forward).
Rule class_loss(bool probabilities_allowed, bool with_total_weight) {
  return [=](const std::vector<c10::IValue>& s) {
    const at::Tensor &x = s[0].toTensor(), &target = s[1].toTensor();
    TORCH_CHECK(x.dim() >= 1, "a loss over classes needs an input with a class dimension");
    std::vector<int64_t> expected = x.sizes().vec();
    expected.erase(expected.begin() + (x.dim() >= 2 ? 1 : 0));
    const bool probabilities = probabilities_allowed && c10::isFloatingType(target.scalar_type());
    if (probabilities) {
      TORCH_CHECK(target.sizes() == x.sizes(), "Expected target size ", x.sizes(), ", got ", target.sizes());
    } else {
      TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ", target.scalar_type());
      TORCH_CHECK(target.sizes().vec() == expected, "Expected target size ", c10::IntArrayRef(expected), ", got ",
                  target.sizes());
    }
    auto opts = meta_options(x.scalar_type());
    const bool none = s[3].toInt() == 0;  // at::Reduction::None
    std::vector<at::Tensor> out{at::empty(none ? expected : std::vector<int64_t>{}, opts)};
    if (with_total_weight) out.push_back(at::empty({}, opts));
    return out;
  };
}

const std::unordered_map<std::string, Rule>& rules() {
  static const std::unordered_map<std::string, Rule> table = {
      // The CPU kernels refuse bool tensors: so must the rules, or an unused
      // call that raises in eager disappears from the compiled graph.
      {"aten::abs", rejects_bool(same_as_input(), "\"abs_cpu\" not implemented for 'Bool'")},
      {"aten::relu", rejects_bool(same_as_input(), "Boolean inputs not supported for relu")},
      {"aten::hardtanh", rejects_bool(same_as_input(), "Bool inputs not supported for hardtanh")},
      {"aten::abs_", rejects_bool(returns_input(), "\"abs_cpu\" not implemented for 'Bool'")},
      {"aten::relu_", rejects_bool(returns_input(), "Boolean inputs not supported for relu")},
      {"aten::hardtanh_", rejects_bool(returns_input(), "Bool inputs not supported for hardtanh")},
      {"aten::var.correction", variance(false)},
      {"aten::var.dim", variance(false)},
      {"aten::std.correction", variance(false)},
      {"aten::std.dim", variance(false)},
      {"aten::var_mean.correction", variance(true)},
      {"aten::std_mean.correction", variance(true)},
      {"aten::index_select",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& x = s[0].toTensor();
         std::vector<int64_t> sizes = x.sizes().vec();
         if (!sizes.empty()) {
           int64_t dim = s[1].toInt();
           sizes.at(dim < 0 ? dim + x.dim() : dim) = s[2].toTensor().numel();
         }
         return std::vector<at::Tensor>{at::empty(sizes, meta_options(x.scalar_type()))};
       }},
      {"aten::conv2d",
       [](const std::vector<c10::IValue>& s) {
         return std::vector<at::Tensor>{conv_output(s[0].toTensor(), s[1].toTensor(), s[3].toIntVector(),
                                                    s[4].toIntVector(), s[5].toIntVector(), false, {0}, s[6].toInt())};
       }},
      {"aten::conv_transpose1d",
       [](const std::vector<c10::IValue>& s) { return conv_transpose_output("aten::conv_transpose1d", s); }},
      {"aten::conv_transpose2d",
       [](const std::vector<c10::IValue>& s) { return conv_transpose_output("aten::conv_transpose2d", s); }},
      {"aten::conv_transpose3d",
       [](const std::vector<c10::IValue>& s) { return conv_transpose_output("aten::conv_transpose3d", s); }},
      {"aten::convolution",
       [](const std::vector<c10::IValue>& s) {
         return std::vector<at::Tensor>{conv_output(s[0].toTensor(), s[1].toTensor(), s[3].toIntVector(),
                                                    s[4].toIntVector(), s[5].toIntVector(), s[6].toBool(),
                                                    s[7].toIntVector(), s[8].toInt())};
       }},
      {"aten::layer_norm",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& x = s[0].toTensor();
         return std::vector<at::Tensor>{at::empty(x.sizes(), meta_options(x.scalar_type()))};
       }},
      {"aten::native_layer_norm",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& x = s[0].toTensor();
         size_t normalized = s[1].toIntVector().size();
         std::vector<int64_t> stat = x.sizes().vec();
         for (size_t i = stat.size() - normalized; i < stat.size(); ++i) stat[i] = 1;
         auto opts = meta_options(x.scalar_type());
         return std::vector<at::Tensor>{at::empty(x.sizes(), opts), at::empty(stat, opts), at::empty(stat, opts)};
       }},
      {"aten::_native_multi_head_attention",
       // (query [B, L, E], key, value, embed_dim, num_head, ..., mask, need_weights,
       // average_attn_weights, mask_type) -> (out [B, L, E], weights or undefined)
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor &q = s[0].toTensor(), &k = s[1].toTensor();
         auto opts = meta_options(q.scalar_type());
         at::Tensor out = at::empty(q.sizes(), opts);
         if (!s[10].toBool()) return std::vector<at::Tensor>{out, at::Tensor()};
         int64_t b = q.size(0), l = q.size(1), src = k.size(1), heads = s[4].toInt();
         std::vector<int64_t> weights = s[11].toBool() ? std::vector<int64_t>{b, l, src}
                                                        : std::vector<int64_t>{b, heads, l, src};
         return std::vector<at::Tensor>{out, at::empty(weights, opts)};
       }},
      // TransformerEncoderLayer's fast path (eval, no grad): out has src's shape.
      {"aten::_transformer_encoder_layer_fwd",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& src = s[0].toTensor();
         return std::vector<at::Tensor>{at::empty(src.sizes(), meta_options(src.scalar_type()))};
       }},
      // cdist(x1 [..., P, M], x2 [..., R, M]) -> [broadcast ..., P, R]
      {"aten::cdist",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor &a = s[0].toTensor(), &b = s[1].toTensor();
         std::vector<int64_t> batch = at::infer_size(a.sizes().slice(0, a.dim() - 2), b.sizes().slice(0, b.dim() - 2));
         batch.push_back(a.size(-2));
         batch.push_back(b.size(-2));
         return std::vector<at::Tensor>{at::empty(batch, meta_options(a.scalar_type()))};
       }},
      {"aten::threshold_backward", same_as_input()},
      {"aten::native_dropout",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& x = s[0].toTensor();
         return std::vector<at::Tensor>{at::empty_like(x), at::empty(x.sizes(), meta_options(at::kBool))};
       }},
      {"aten::native_dropout_backward", same_as_input()},
      {"aten::native_batch_norm",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& x = s[0].toTensor();
         int64_t c = s[5].toBool() && x.dim() > 1 ? x.size(1) : 0;
         auto opts = meta_options(c10::toRealValueType(x.scalar_type()));
         return std::vector<at::Tensor>{at::empty_like(x), at::empty({c}, opts), at::empty({c}, opts)};
       }},
      {"aten::native_batch_norm_backward",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& x = s[1].toTensor();
         int64_t c = x.dim() > 1 ? x.size(1) : 1;
         auto opts = meta_options(x.scalar_type());
         return std::vector<at::Tensor>{at::empty_like(x), at::empty({c}, opts), at::empty({c}, opts)};
       }},
      {"aten::native_layer_norm_backward",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& x = s[1].toTensor();
         auto like = [&](const c10::IValue& v) {
           return v.isTensor() ? at::empty_like(v.toTensor()) : at::empty({0}, meta_options(x.scalar_type()));
         };
         return std::vector<at::Tensor>{at::empty_like(x), like(s[5]), like(s[6])};
       }},
      {"aten::convolution_backward",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor &x = s[1].toTensor(), &w = s[2].toTensor();
         bool transposed = s[7].toBool();
         int64_t c_out = transposed ? w.size(1) * s[9].toInt() : w.size(0);
         std::vector<int64_t> bias = s[3].isNone() ? std::vector<int64_t>{c_out} : s[3].toIntVector();
         return std::vector<at::Tensor>{at::empty_like(x), at::empty_like(w), at::empty(bias, meta_options(w.scalar_type()))};
       }},
      {"aten::embedding_dense_backward",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& g = s[0].toTensor();
         return std::vector<at::Tensor>{at::empty({s[2].toInt(), g.size(-1)}, meta_options(g.scalar_type()))};
       }},
      {"aten::where.self",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor &c = s[0].toTensor(), &a = s[1].toTensor(), &b = s[2].toTensor();
         TORCH_CHECK(c.scalar_type() == at::kBool || c.scalar_type() == at::kByte,
                     "where expected condition to be a boolean tensor");
         auto dtype = at::result_type(a, b);
         auto cast = [&](const at::Tensor& t) { return t.scalar_type() == dtype ? t : t.to(dtype); };
         return std::vector<at::Tensor>{iterator_output({c, cast(a), cast(b)}, dtype)};
       }},
      // A Python number for self or other: eager wraps it in a 0-d tensor
      // and runs where.self's TensorIterator over (condition, self, other),
      // so the condition's layout leads; the meta kernel LibTorch's Python
      // registers follows the tensor's (`torch.where(a != 0, c.t(), 0.0)`).
      {"aten::where.ScalarOther", where_with_numbers()},
      {"aten::where.ScalarSelf", where_with_numbers()},
      {"aten::where.Scalar", where_with_numbers()},
      // LibTorch 1.13 has no meta kernel for the logical ops: logical_not
      // returns a contiguous tensor where eager's TensorIterator keeps the
      // input's layout, the binary ones raise.
      {"aten::logical_not",
       [](const std::vector<c10::IValue>& s) {
         return std::vector<at::Tensor>{iterator_output({s[0].toTensor()}, at::kBool)};
       }},
      // Eager's isnan is `self != self` (TensorIterator's layout); the meta
      // function LibTorch's Python registers returns empty_like(self).
      {"aten::isnan",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& x = s[0].toTensor();
         return std::vector<at::Tensor>{iterator_output({x, x}, at::kBool)};
       }},
      // LibTorch 1.13's meta floor_divide lays a size-1 dim out as in a
      // dense tensor of the dims' order; eager's TensorIterator gives the
      // output of one dense input its strides exactly (fuzz seed 9953887:
      // `(x // 2).stride()` of an (n, 1, m) tensor with strides (m, 1, 1)).
      // The meta kernel still runs, for its checks and dtype.
      {"aten::floor_divide",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& a = s[0].toTensor();
         const at::Tensor& b = s[1].toTensor();
         if (s.size() > 2 && s[2].isTensor()) {  // floor_divide.out (the rules are found by name too)
           at::Tensor out = s[2].toTensor();
           return std::vector<at::Tensor>{at::floor_divide_out(out, a, b)};
         }
         // `x // 2`, `7 // x`: the number (a meta wrapped number, run_meta_rule) cannot reach the meta function
         // torch's Python registers, which reads numbers on CPU only; result_type reads its flag for the dtype
         const bool number = a.unsafeGetTensorImpl()->is_wrapped_number() || b.unsafeGetTensorImpl()->is_wrapped_number();
         const c10::ScalarType dtype = number ? at::result_type(a, b) : at::floor_divide(a, b).scalar_type();
         return std::vector<at::Tensor>{iterator_output({promoted_copy(a, dtype), promoted_copy(b, dtype)}, dtype)};
       }},
      {"aten::floor_divide.Scalar",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& a = s[0].toTensor();
         const c10::ScalarType dtype = at::floor_divide(a, s[1].toScalar()).scalar_type();
         return std::vector<at::Tensor>{iterator_output({promoted_copy(a, dtype)}, dtype)};
       }},
      {"aten::logical_and", logical_binary()},
      {"aten::logical_or", logical_binary()},
      {"aten::logical_xor", logical_binary()},
      // The meta kernel keeps the input's strides; eager's output is empty_like(self).
      {"aten::_embedding_bag_forward_only", embedding_bag(false)},
      {"aten::_embedding_bag", embedding_bag(true)},
      {"aten::cross_entropy_loss", class_loss(true, false)},
      {"aten::nll_loss_nd", class_loss(false, false)},
      {"aten::nll_loss2d", class_loss(false, false)},
      {"aten::nll_loss2d_forward", class_loss(false, true)},
      // one_hot(self, num_classes): int64 of self's shape + [num_classes];
      // without num_classes the size is the data's maximum (data-dependent).
      {"aten::one_hot",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& x = s[0].toTensor();
         TORCH_CHECK(x.scalar_type() == at::kLong, "one_hot is only applicable to index tensor.");
         int64_t n = s[1].toInt();
         TORCH_CHECK(n >= 0, "one_hot without num_classes: the size is the data's maximum (data-dependent)");
         std::vector<int64_t> sizes = x.sizes().vec();
         sizes.push_back(n);
         return std::vector<at::Tensor>{at::empty(sizes, meta_options(at::kLong))};
       }},
      // multinomial(self [C] or [B, C], num_samples, replacement, generator):
      // int64 [num_samples] or [B, num_samples] (Categorical.sample); the
      // CPU kernel's checks on the operands' shape and dtype, repeated.
      {"aten::multinomial",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& p = s[0].toTensor();
         const int64_t n = s[1].toInt();
         TORCH_CHECK(p.dim() > 0 && p.dim() <= 2, "prob_dist must be 1 or 2 dim");
         TORCH_CHECK(at::isFloatingType(p.scalar_type()), "multinomial only supports floating-point dtypes for input, got: ",
                     p.scalar_type());
         TORCH_CHECK(n > 0, "cannot sample n_sample <= 0 samples");
         TORCH_CHECK(s[2].toBool() || n <= p.size(-1), "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
         std::vector<int64_t> sizes = p.dim() == 1 ? std::vector<int64_t>{n} : std::vector<int64_t>{p.size(0), n};
         return std::vector<at::Tensor>{at::empty(sizes, meta_options(at::kLong))};
       }},
      // _ctc_loss(log_probs [T, N, C] or [T, C], targets, int[] input_lengths,
      // int[] target_lengths, blank, zero_infinity) -> (neg_log_likelihood
      // [N] or [], log_alpha [N, T, 2 * max(target_lengths) + 1]), as the CPU
      // kernel sizes them (its Tensor-lengths overload reads the data: no rule).
      {"aten::_ctc_loss",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& lp = s[0].toTensor();
         TORCH_CHECK(s[2].isIntList() && s[3].isIntList(), "_ctc_loss with tensor lengths reads them (data-dependent)");
         const std::vector<int64_t> target_lengths = s[3].toIntVector();
         const bool batched = lp.dim() == 3;
         TORCH_CHECK(lp.dim() == 2 || batched, "ctc_loss: log_probs must be 2-D or 3-D");
         const int64_t n = batched ? lp.size(1) : 1;
         TORCH_CHECK(static_cast<int64_t>(s[2].toIntVector().size()) == n, "input_lengths must be of size batch_size");
         TORCH_CHECK(static_cast<int64_t>(target_lengths.size()) == n, "target_lengths must be of size batch_size");
         int64_t max_target = 0;
         for (int64_t l : target_lengths) max_target = std::max(max_target, l);
         auto opts = meta_options(lp.scalar_type());
         at::Tensor nll = batched ? at::empty({n}, opts) : at::empty({}, opts);
         return std::vector<at::Tensor>{nll, at::empty({n, lp.size(0), 2 * max_target + 1}, opts)};
       }},
      // ctc_loss.IntList(log_probs, targets, input_lengths, target_lengths,
      // blank, reduction, zero_infinity): [N] (or [] unbatched) without
      // reduction, else [] (the composite runs _ctc_loss, which has none).
      {"aten::ctc_loss.IntList",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& lp = s[0].toTensor();
         TORCH_CHECK(lp.dim() == 2 || lp.dim() == 3, "ctc_loss: log_probs must be 2-D or 3-D");
         const bool per_sample = s[5].toInt() == 0 && lp.dim() == 3;  // Reduction::None
         auto opts = meta_options(lp.scalar_type());
         return std::vector<at::Tensor>{per_sample ? at::empty({lp.size(1)}, opts) : at::empty({}, opts)};
       }},
      // torchvision::roi_align(input [N, C, H, W], rois [K, 5], spatial_scale,
      // pooled_height, pooled_width, sampling_ratio, aligned) -> [K, C, ph, pw]
      {"torchvision::roi_align",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor &x = s[0].toTensor(), &rois = s[1].toTensor();
         TORCH_CHECK(x.dim() == 4 && rois.dim() == 2 && rois.size(1) == 5, "roi_align: input [N, C, H, W], rois [K, 5]");
         TORCH_CHECK(x.scalar_type() == rois.scalar_type(), "roi_align: input and rois of one dtype");
         return std::vector<at::Tensor>{
             at::empty({rois.size(0), x.size(1), s[3].toInt(), s[4].toInt()}, meta_options(x.scalar_type()))};
       }},
      // _weight_norm(v, g, dim) (nn.utils.weight_norm's hook): v * (g / ||v||),
      // v's shape; on the meta device the composite takes the fused
      // _weight_norm_interface, which has no meta kernel.
      {"aten::_weight_norm",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor &v = s[0].toTensor(), &g = s[1].toTensor();
         return std::vector<at::Tensor>{at::empty(v.sizes(), meta_options(at::result_type(v, g)))};
       }},
      // _ctc_loss_backward(grad, log_probs, ...): the gradient of log_probs.
      {"aten::_ctc_loss_backward",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& lp = s[1].toTensor();
         return std::vector<at::Tensor>{at::empty(lp.sizes(), meta_options(lp.scalar_type()))};
       }},
      // Reductions along one dim to (values, int64 indices) LibTorch 1.13 has
      // no meta kernel for: kthvalue(self, k, dim, keepdim), median.dim(self,
      // dim, keepdim), mode(self, dim, keepdim).
      {"aten::kthvalue", select_along_dim(2, 3)},
      {"aten::median.dim", select_along_dim(1, 2)},
      {"aten::mode", select_along_dim(1, 2)},
      // cummax/cummin(self, dim): (values, int64 indices) of self's shape.
      {"aten::cummax", cumulative_extreme()},
      {"aten::cummin", cumulative_extreme()},
      // bucketize.Tensor(self, boundaries, out_int32, right) and
      // searchsorted.Tensor(sorted_sequence, self, out_int32, ...): an index
      // per element of `self`, int32 or int64.
      {"aten::bucketize.Tensor", bucket_indices(0)},
      {"aten::searchsorted.Tensor", bucket_indices(1)},
      // repeat_interleave.self_int(self, repeats, dim, output_size): self's
      // size at dim times repeats (flattened without dim); the composite
      // builds a repeats tensor on self's device and reads it.
      {"aten::repeat_interleave.self_int",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor& x = s[0].toTensor();
         const int64_t repeats = s[1].toInt();
         TORCH_CHECK(repeats >= 0, "repeats can not be negative");
         std::vector<int64_t> sizes = x.sizes().vec();
         if (s.size() < 3 || s[2].isNone()) {
           sizes = {x.numel() * repeats};
         } else {
           // a 0-d self has no dim to repeat along: eager raises (no scalar wrap)
           const int64_t dim = c10::maybe_wrap_dim(s[2].toInt(), x.dim(), /*wrap_scalar=*/false);
           sizes[static_cast<size_t>(dim)] *= repeats;
         }
         return std::vector<at::Tensor>{at::empty(sizes, meta_options(x.scalar_type()))};
       }},
      // _cdist_forward(x1 [*, r1, m], x2 [*, r2, m], p, compute_mode) -> [*, r1, r2]
      // (torch.cdist's kernel for small inputs; its batch dims broadcast).
      {"aten::_cdist_forward",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor &a = s[0].toTensor(), &b = s[1].toTensor();
         TORCH_CHECK(a.dim() >= 2 && b.dim() >= 2 && a.size(-1) == b.size(-1),
                     "cdist: X1 and X2 must have at least 2 dims and the same number of columns");
         std::vector<int64_t> batch = at::infer_size(a.sizes().slice(0, a.dim() - 2), b.sizes().slice(0, b.dim() - 2));
         batch.push_back(a.size(-2));
         batch.push_back(b.size(-2));
         return std::vector<at::Tensor>{at::empty(batch, meta_options(a.scalar_type()))};
       }},
      // _cdist_backward(grad, x1, x2, p, cdist): the gradient of x1, x1's
      // shape (batch dims that broadcast are left to the kernel's own checks).
      {"aten::_cdist_backward",
       [](const std::vector<c10::IValue>& s) {
         const at::Tensor &a = s[1].toTensor(), &b = s[2].toTensor();
         TORCH_CHECK(a.sizes().slice(0, a.dim() - 2) == b.sizes().slice(0, b.dim() - 2),
                     "_cdist_backward: batch dims that broadcast");
         return std::vector<at::Tensor>{at::empty(a.sizes(), meta_options(a.scalar_type()))};
       }},
      {"aten::flip",
       [](const std::vector<c10::IValue>& s) {
         at::flip(s[0].toTensor(), s[1].toIntVector());  // the argument checks
         return std::vector<at::Tensor>{at::empty_like(s[0].toTensor(), at::MemoryFormat::Preserve)};
       }},
  };
  return table;
}

}  // namespace

namespace detail {
const MetaRule* meta_rule(const std::string& qualified, const std::string& name) {
  auto it = rules().find(qualified);
  if (it == rules().end()) it = rules().find(name);
  return it == rules().end() ? nullptr : &it->second;
}

std::vector<at::Tensor> run_meta_rule(const MetaRule& rule, std::vector<c10::IValue> stack, bool on_cpu) {
  bool beside_meta = false;
  for (const c10::IValue& v : stack)
    beside_meta |= v.isTensor() && v.toTensor().defined() && v.toTensor().is_meta();
  if (beside_meta)
    for (c10::IValue& v : stack) {
      if (!v.isTensor()) continue;
      const at::Tensor& t = v.toTensor();
      if (!t.defined() || t.dim() != 0 || !t.device().is_cpu()) continue;
      at::Tensor m = at::empty({}, t.options().device(c10::kMeta));
      m.unsafeGetTensorImpl()->set_wrapped_number(t.unsafeGetTensorImpl()->is_wrapped_number());
      v = m;
    }
  const bool was = rule_on_cpu;
  rule_on_cpu = on_cpu;
  struct Restore {
    bool v;
    ~Restore() { rule_on_cpu = v; }
  } restore{was};
  return rule(stack);
}
}  // namespace detail

}  // namespace tj::graph
