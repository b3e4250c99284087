// Internal to src/graph: the table of hand-written shape functions for ops
// that have no Meta kernel in LibTorch 1.13 (convolution, batch/layer norm
// and their backwards, dropout, relu, where, ...). A rule takes the boxed
// argument stack (meta tensors) and returns the meta results. Shared by meta
// inference (meta_infer.cpp) and the AOT proxy recorder (aot/proxy.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

namespace tj::graph {
struct OpInfo;
}

namespace tj::graph::detail {

using MetaRule = std::function<std::vector<at::Tensor>(const std::vector<c10::IValue>&)>;

// The rule for `qualified` ("aten::relu"), else for the op's name, or nullptr.
const MetaRule* meta_rule(const std::string& qualified, const std::string& name);

// Runs `rule` on `stack` as every caller must: a CPU 0-d tensor beside meta
// tensors (a Python number eager wraps, `x // 2`; a 0-d constant), which
// LibTorch's meta kernels refuse where eager's CPU kernels take it as a
// scalar, is given to the rule as a meta 0-d tensor with its wrapped-number
// flag, so type promotion still treats it as eager does. (A rule must not
// hand such a number to a meta function torch's Python registers: those
// read wrapped numbers on CPU only.) `on_cpu`: the op runs on the CPU,
// whose kernels lay some results out otherwise (a transposed convolution).
std::vector<at::Tensor> run_meta_rule(const MetaRule& rule, std::vector<c10::IValue> stack, bool on_cpu = true);

// Factories whose dtype eager infers from their Scalar arguments, which
// LibTorch 1.13's meta kernels get wrong (`full((2,), 3)` is float32 on
// meta): sets the dtype argument of `stack` to the one the CPU kernel infers.
void infer_factory_dtype(const OpInfo& op, std::vector<c10::IValue>& stack);

// On CPU, a TensorIterator op that promotes its inputs to a common dtype
// runs on copies `input.to(common)` of the inputs of another dtype
// (TensorIteratorBase::compute_types); the copy of a tensor that is not
// dense (an expanded one) is contiguous, and the output's layout follows
// the copies. Meta tensors skip the copies: for the ops that promote
// (binary and comparison ops, clamp with tensor bounds, addcmul/addcdiv,
// where's self and other; true division, atan2, copysign and xlogy to a
// float type), this makes them in `stack`, over every tensor operand, so
// that a meta call gives the CPU kernel's output strides.
void promote_like_cpu(const OpInfo& op, std::vector<c10::IValue>& stack);

// The CPU's copy of an operand a TensorIterator op promotes to `common`
// (`input.to(common)`), as promote_like_cpu makes it: a dense tensor as it is.
at::Tensor promoted_copy(const at::Tensor& t, c10::ScalarType common);

}  // namespace tj::graph::detail
