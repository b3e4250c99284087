// A fusion group under construction; see fusion_group.h.
#include "jit/fusion_group.h"

#include <cassert>
#include <map>
#include <mutex>
#include <string>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/ones.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include "graph/boxing.h"
#include "graph/op_registry.h"

namespace tj::jit {

using c10::ScalarType;
using graph::Arg;
using graph::Node;
using graph::TensorMeta;
using loop::Expr;
using loop::Op;

bool supported_dtype(ScalarType t) {
  return t == ScalarType::Bool || t == ScalarType::Int || t == ScalarType::Long || is_float(t);
}

bool is_float(ScalarType t) { return t == ScalarType::Float || t == ScalarType::Double || is_reduced_float(t); }

bool is_reduced_float(ScalarType t) { return t == ScalarType::Half || t == ScalarType::BFloat16; }

bool eager_runs_on_cpu(const Node& node) {
  static std::mutex mutex;
  static std::map<std::string, bool> known;
  std::string key = node.op()->qualified_name();
  for (const Node* in : node.inputs())
    if (const TensorMeta* m = in->meta().tensor()) key += std::string(" ") + c10::toString(m->dtype);
  for (const auto& [name, value] : node.kwargs())
    if (value.is<ScalarType>()) key += " " + name + "=" + c10::toString(value.as<ScalarType>());
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(key); it != known.end()) return it->second;
  // one element of each input's dtype and rank
  std::map<const Node*, c10::IValue> values;
  for (const Node* in : node.inputs()) {
    const TensorMeta* m = in->meta().tensor();
    if (!m) return known[key] = false;
    values[in] = at::ones(std::vector<int64_t>(m->sizes.size(), 1), at::TensorOptions().dtype(m->dtype));
  }
  bool ok = false;
  try {
    auto stack = graph::detail::box_arguments(node, [&](const Node* n) -> const c10::IValue& { return values.at(n); });
    if (stack) {
      node.op()->handle().callBoxed(*stack);
      ok = true;
    }
  } catch (const std::exception&) {
    ok = false;
  }
  return known[key] = ok;
}

const TensorMeta* tensor_meta(const Node* node) {
  const TensorMeta* m = node->meta().tensor();
  if (!m || !m->device.is_cpu() || !supported_dtype(m->dtype)) return nullptr;
  return m;
}

const Arg* arg_at(const Node& n, size_t i, const char* name) {
  if (i < n.args().size()) return &n.args()[i];
  return n.kwarg(name);
}

Form GroupBuilder::form_of(const std::vector<int64_t>& sizes) const {
  if (sizes == shape_) return Form::full;
  if (reduced_.empty()) return Form::none;
  std::vector<int64_t> keep, squeezed;
  for (size_t d = 0; d < shape_.size(); ++d) {
    keep.push_back(reduced_[d] ? 1 : shape_[d]);
    if (!reduced_[d]) squeezed.push_back(shape_[d]);
  }
  if (sizes == keep) return Form::keep;
  if (sizes == squeezed) return Form::squeezed;
  return Form::none;
}

std::optional<std::vector<int>> GroupBuilder::dims_of(const std::vector<int64_t>& sizes, Form form,
                                                      const std::vector<int64_t>& reader) const {
  if (sizes.size() > reader.size() || form == Form::none) return std::nullopt;
  std::vector<int> kept;
  for (size_t d = 0; d < shape_.size(); ++d)
    if (reduced_.empty() || !reduced_[d]) kept.push_back(static_cast<int>(d));
  const size_t shift = reader.size() - sizes.size();
  std::vector<int> dims(sizes.size(), -1);
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 1) continue;
    size_t r = i + shift;
    int s = form == Form::squeezed ? (r < kept.size() ? kept[r] : -1) : static_cast<int>(r);
    if (s < 0 || s >= static_cast<int>(shape_.size()) || shape_[s] != sizes[i]) return std::nullopt;
    dims[i] = s;
  }
  return dims;
}

int GroupBuilder::constant(double v, ScalarType t) {
  Expr e;
  e.op = Op::constant;
  e.dtype = t;
  e.value = t == ScalarType::Bool ? (v != 0) : (is_float(t) ? v : static_cast<double>(static_cast<int64_t>(v)));
  // a number used with a half/bfloat16 tensor is converted to its dtype first, as eager does
  if (t == ScalarType::Half) e.value = static_cast<float>(c10::Half(static_cast<float>(v)));
  if (t == ScalarType::BFloat16) e.value = static_cast<float>(c10::BFloat16(static_cast<float>(v)));
  return kernel_.add(e);
}

int GroupBuilder::cast(int e, ScalarType t) {
  if (e < 0 || kernel_.exprs[e].dtype == t) return e;
  if (kernel_.exprs[e].op == Op::constant) return constant(kernel_.exprs[e].value, t);
  return kernel_.add(Expr{Op::cast, t, {e}});
}

int GroupBuilder::op(Op o, ScalarType t, std::vector<int> args) {
  const loop::OpInfo& info = loop::info(o);
  assert(static_cast<int>(args.size()) == info.arity && "as many operands as the op takes");
  for (int a : args)
    if (a < 0) return -1;
  // half/bfloat16 compute in float32; add_member rounds the node's result
  // once, as eager's kernels do (gelu, softmax: one rounding per ATen op)
  for (int& a : args)
    if (is_reduced_float(kernel_.exprs[a].dtype)) a = cast(a, ScalarType::Float);
  if (is_reduced_float(t)) t = ScalarType::Float;
  // only what the op table lists (loop_ops.h): every code generator
  // computes it, and tests/unit/jit/test_loop_ops.cpp checks they agree with ATen
  const size_t first = info.condition_first ? 1 : 0;
  const ScalarType computed = args.size() > first ? kernel_.exprs[args[first]].dtype : t;
  if (!loop::computes_in(o, computed) || loop::result_dtype(o, computed) != t) return -1;
  for (size_t i = 0; i < args.size(); ++i)
    if (kernel_.exprs[args[i]].dtype != (i < first ? ScalarType::Bool : computed)) return -1;
  return kernel_.add(Expr{o, t, std::move(args)});
}

int GroupBuilder::operand(const Arg& arg, ScalarType t) {
  if (arg.is<double>()) return constant(arg.as<double>(), t);
  if (arg.is<int64_t>()) return constant(static_cast<double>(arg.as<int64_t>()), t);
  if (arg.is<bool>()) return constant(arg.as<bool>() ? 1 : 0, t);
  if (!arg.is_node()) return -1;
  const Node* n = arg.node();
  const TensorMeta* m = tensor_meta(n);
  if (!m) return -1;
  if (contains(n)) {
    const Member& mem = member(n);
    auto read_as = dims_of(m->sizes, reader_form_, reader_shape_);
    if (!read_as || *read_as != mem.dims) return -1;
    return cast(mem.expr, t);
  }
  return cast(load(n, *m), t);
}

int GroupBuilder::load(const Node* n, const TensorMeta& m) {
  auto dims = dims_of(m.sizes, reader_form_, reader_shape_);
  if (!dims) return -1;
  auto key = std::make_pair(n, *dims);
  int index;
  if (auto in = input_index_.find(key); in != input_index_.end()) {
    index = in->second;
  } else {
    index = static_cast<int>(inputs_.size());
    inputs_.push_back({n, *dims});
    input_index_[key] = index;
    loop::Input input;
    input.dtype = m.dtype;
    kernel_.inputs.push_back(input);
  }
  Expr e;
  e.op = Op::load;
  e.dtype = m.dtype;
  e.input = index;
  return kernel_.add(e);
}

std::optional<ScalarType> GroupBuilder::dtype_of(const Arg& arg) const {
  if (arg.is<double>()) return ScalarType::Double;
  if (arg.is<int64_t>()) return ScalarType::Long;
  if (arg.is<bool>()) return ScalarType::Bool;
  if (arg.is_node()) {
    if (const TensorMeta* m = tensor_meta(arg.node())) return m->dtype;
  }
  return std::nullopt;
}

std::optional<int> GroupBuilder::result(const Node* node, size_t index) const {
  auto it = results_.find(node);
  if (it == results_.end() || index >= it->second.size()) return std::nullopt;
  return it->second[index];
}

bool GroupBuilder::add_member(const Node* node, const Emitter& emit, Form form, const std::vector<int64_t>& reader,
                              const std::vector<bool>* reduce) {
  const size_t exprs = kernel_.exprs.size();
  const size_t inputs = inputs_.size();
  const std::vector<bool> reduced = reduced_;
  if (reduce) reduced_ = *reduce;
  reader_form_ = form;
  reader_shape_ = reader;
  int e = emit(*this, *node);
  const TensorMeta* m = node->meta().tensor();
  if (e >= 0 && m && is_reduced_float(m->dtype)) e = cast(e, m->dtype);
  std::optional<std::vector<int>> own;
  Form own_form = Form::none;
  if (m) {
    own_form = form_of(m->sizes);
    own = dims_of(m->sizes, own_form, m->sizes);
  }
  bool ok = e >= 0 && (!m || (kernel_.exprs[e].dtype == m->dtype && own));
  if (!ok) {
    kernel_.exprs.resize(exprs);
    kernel_.inputs.resize(inputs);
    for (size_t i = inputs; i < inputs_.size(); ++i) input_index_.erase({inputs_[i].node, inputs_[i].dims});
    inputs_.resize(inputs);
    reduced_ = reduced;
    results_.erase(node);
    return false;
  }
  member_index_[node] = members_.size();
  members_.push_back({node, e, own_form, m ? *own : std::vector<int>{}});
  return true;
}

bool GroupBuilder::add_alias(const Node* node, int expr) {
  const TensorMeta* m = tensor_meta(node);
  if (m && expr >= 0 && is_reduced_float(m->dtype)) expr = cast(expr, m->dtype);  // layer_norm's results
  if (!m || expr < 0 || kernel_.exprs[expr].dtype != m->dtype) return false;
  Form form = form_of(m->sizes);
  auto own = dims_of(m->sizes, form, m->sizes);
  if (!own) return false;
  member_index_[node] = members_.size();
  members_.push_back({node, expr, form, *own});
  return true;
}

bool GroupBuilder::same_values(const Node* node, const Node* of) const {
  const TensorMeta* m = tensor_meta(node);
  if (!m || !contains(of)) return false;
  Form form = form_of(m->sizes);
  auto own = dims_of(m->sizes, form, m->sizes);
  if (!own) return false;
  // the same dims of S, in the same order, after dropping size-1 dims
  auto strip = [](const std::vector<int>& dims) {
    std::vector<int> out;
    for (int d : dims)
      if (d >= 0) out.push_back(d);
    return out;
  };
  return strip(*own) == strip(member(of).dims);
}

}  // namespace tj::jit
