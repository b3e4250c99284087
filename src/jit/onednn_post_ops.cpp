// A oneDNN step's post-ops as oneDNN attributes (see onednn_post_ops.h).
#include "jit/onednn_post_ops.h"

#include <cfloat>
#include <cmath>

#include "jit/onednn_memory.h"

namespace tj::jit::onednn {

namespace {

void add_eltwise(dnnl::post_ops& po, const PostOp& p) {
  using dnnl::algorithm;
  const float a = static_cast<float>(p.alpha), b = static_cast<float>(p.beta);
  switch (p.alg) {
    case Eltwise::relu: po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f); break;
    case Eltwise::leaky_relu: po.append_eltwise(1.f, algorithm::eltwise_relu, a, 0.f); break;
    case Eltwise::gelu_erf: po.append_eltwise(1.f, algorithm::eltwise_gelu_erf, 0.f, 0.f); break;
    case Eltwise::gelu_tanh: po.append_eltwise(1.f, algorithm::eltwise_gelu_tanh, 0.f, 0.f); break;
    case Eltwise::silu: po.append_eltwise(1.f, algorithm::eltwise_swish, 1.f, 0.f); break;
    case Eltwise::sigmoid: po.append_eltwise(1.f, algorithm::eltwise_logistic, 0.f, 0.f); break;
    case Eltwise::tanh: po.append_eltwise(1.f, algorithm::eltwise_tanh, 0.f, 0.f); break;
    case Eltwise::hardswish: po.append_eltwise(1.f, algorithm::eltwise_hardswish, 0.f, 0.f); break;
    case Eltwise::hardsigmoid:  // min(max(x + 3, 0), 6) / 6 as clip(x / 6 + 1/2, 0, 1): 2.6 has no hardsigmoid
      po.append_eltwise(1.f, algorithm::eltwise_linear, 1.f / 6.f, 0.5f);
      po.append_eltwise(1.f, algorithm::eltwise_clip_v2, 0.f, 1.f);
      break;
    case Eltwise::elu: po.append_eltwise(1.f, algorithm::eltwise_elu, a, 0.f); break;
    case Eltwise::clamp:
      po.append_eltwise(1.f, algorithm::eltwise_clip_v2, std::isinf(a) ? -FLT_MAX : a, std::isinf(b) ? FLT_MAX : b);
      break;
    case Eltwise::scale: po.append_eltwise(1.f, algorithm::eltwise_linear, a, 0.f); break;
  }
}

}  // namespace

Operands operands_of(const Plan& plan, const std::vector<const at::Tensor*>& reads) {
  Operands out;
  int index = 0;
  for (const PostOp& p : plan.post) {
    // a hardsigmoid is two oneDNN post-ops
    if (p.kind == PostOp::Kind::binary_mul || p.kind == PostOp::Kind::binary_add) {
      const at::Tensor& t = *reads.at(static_cast<size_t>(p.operand));
      out.tensors.emplace_back(index, t.contiguous());
      out.key += " b" + std::to_string(index) + ":";
      for (int64_t s : t.sizes()) out.key += std::to_string(s) + ",";
    }
    index += p.kind == PostOp::Kind::eltwise && p.alg == Eltwise::hardsigmoid ? 2 : 1;
  }
  return out;
}

dnnl::primitive_attr attr_of(const Plan& plan, const Operands& operands, size_t rank) {
  dnnl::post_ops po;
  size_t next = 0;
  for (const PostOp& p : plan.post) {
    if (p.kind == PostOp::Kind::sum) po.append_sum(static_cast<float>(p.alpha));
    else if (p.kind == PostOp::Kind::eltwise) add_eltwise(po, p);
    else
      po.append_binary(p.kind == PostOp::Kind::binary_mul ? dnnl::algorithm::binary_mul : dnnl::algorithm::binary_add,
                       post_op_operand_md(operands.tensors.at(next++).second, rank));
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  return attr;
}

}  // namespace tj::jit::onednn
