// Lowering: fusion groups of pointwise ops into loop-IR kernels, everything
// else extern; see lowering.h.
//
// Each pointwise op has an emitter in `emitters()`: it reads its operands
// through a `GroupBuilder` (a node of the group is its expression, any other
// node a kernel input, a Python number a constant), casts them to the dtype
// eager computes in and appends expressions. An emitter that cannot take a
// node (an argument it does not know, a dtype eager would treat differently)
// returns -1 and the builder rolls the kernel back: the node becomes extern.
#include "jit/lowering.h"

#include <functional>
#include <optional>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/result_type.h>

#include "graph/op_registry.h"
#include "support/log.h"

namespace tj::jit {

namespace {

using graph::Arg;
using graph::Node;
using graph::TensorMeta;
using loop::Expr;
using loop::Op;
using c10::ScalarType;

bool supported_dtype(ScalarType t) {
  return t == ScalarType::Bool || t == ScalarType::Int || t == ScalarType::Long || t == ScalarType::Float ||
         t == ScalarType::Double;
}

bool is_float(ScalarType t) { return t == ScalarType::Float || t == ScalarType::Double; }

// The single CPU tensor of a supported dtype `node` produces, or nullptr.
const TensorMeta* tensor_meta(const Node* node) {
  const TensorMeta* m = node->meta().tensor();
  if (!m || !m->device.is_cpu() || !supported_dtype(m->dtype)) return nullptr;
  return m;
}

// Builds one group's kernel; see the file comment.
class GroupBuilder {
 public:
  explicit GroupBuilder(std::vector<int64_t> sizes) { kernel_.sizes = std::move(sizes); }

  loop::Kernel& kernel() { return kernel_; }
  const std::vector<const Node*>& members() const { return members_; }
  const std::vector<const Node*>& inputs() const { return inputs_; }
  bool empty() const { return members_.empty(); }
  bool contains(const Node* n) const { return expr_of_.count(n) != 0; }
  int expr_of(const Node* n) const { return expr_of_.at(n); }

  int constant(double v, ScalarType t) {
    Expr e;
    e.op = Op::constant;
    e.dtype = t;
    e.value = t == ScalarType::Bool ? (v != 0) : (is_float(t) ? v : static_cast<double>(static_cast<int64_t>(v)));
    return kernel_.add(e);
  }
  int cast(int e, ScalarType t) {
    if (e < 0 || kernel_.exprs[e].dtype == t) return e;
    if (kernel_.exprs[e].op == Op::constant) return constant(kernel_.exprs[e].value, t);
    return kernel_.add(Expr{Op::cast, t, {e}});
  }
  int op(Op o, ScalarType t, std::vector<int> args) {
    for (int a : args)
      if (a < 0) return -1;
    return kernel_.add(Expr{o, t, std::move(args)});
  }
  // The value of `arg` cast to `t`, or -1.
  int operand(const Arg& arg, ScalarType t) {
    if (arg.is<double>()) return constant(arg.as<double>(), t);
    if (arg.is<int64_t>()) return constant(static_cast<double>(arg.as<int64_t>()), t);
    if (arg.is<bool>()) return constant(arg.as<bool>() ? 1 : 0, t);
    if (!arg.is_node()) return -1;
    return cast(value(arg.node()), t);
  }
  // The dtype of `arg` as an operand (a number: its Python kind).
  std::optional<ScalarType> dtype_of(const Arg& arg) const {
    if (arg.is<double>()) return ScalarType::Double;
    if (arg.is<int64_t>()) return ScalarType::Long;
    if (arg.is<bool>()) return ScalarType::Bool;
    if (arg.is_node()) {
      if (const TensorMeta* m = tensor_meta(arg.node())) return m->dtype;
    }
    return std::nullopt;
  }

  // Adds `node` with `emit`; false (and the kernel unchanged) when it cannot.
  bool add_member(const Node* node, const std::function<int(GroupBuilder&, const Node&)>& emit) {
    size_t exprs = kernel_.exprs.size();
    size_t inputs = inputs_.size();
    int e = emit(*this, *node);
    if (e < 0 || kernel_.exprs[e].dtype != node->meta().tensor()->dtype) {
      kernel_.exprs.resize(exprs);
      kernel_.inputs.resize(inputs);
      for (size_t i = inputs; i < inputs_.size(); ++i) input_index_.erase(inputs_[i]);
      inputs_.resize(inputs);
      return false;
    }
    expr_of_[node] = e;
    members_.push_back(node);
    return true;
  }

 private:
  // A group member's expression, or a load of an outside tensor.
  int value(const Node* n) {
    auto it = expr_of_.find(n);
    if (it != expr_of_.end()) return it->second;
    const TensorMeta* m = tensor_meta(n);
    if (!m) return -1;
    auto in = input_index_.find(n);
    int index;
    if (in != input_index_.end()) {
      index = in->second;
    } else {
      index = static_cast<int>(inputs_.size());
      inputs_.push_back(n);
      input_index_[n] = index;
      loop::Input input;
      input.dtype = m->dtype;
      int64_t numel = 1;
      for (int64_t s : m->sizes) numel *= s;
      if (m->sizes == kernel_.sizes && m->is_contiguous()) {
        input.kind = loop::Input::Kind::full;
      } else if (numel == 1) {
        input.kind = loop::Input::Kind::scalar;
      }
      kernel_.inputs.push_back(input);
    }
    Expr e;
    e.op = Op::load;
    e.dtype = m->dtype;
    e.input = index;
    return kernel_.add(e);
  }

  loop::Kernel kernel_;
  std::vector<const Node*> members_;
  std::vector<const Node*> inputs_;
  std::unordered_map<const Node*, int> expr_of_;
  std::unordered_map<const Node*, int> input_index_;
};

using Emitter = std::function<int(GroupBuilder&, const Node&)>;

ScalarType out_dtype(const Node& n) { return n.meta().tensor()->dtype; }

const Arg* arg_at(const Node& n, size_t i, const char* name) {
  if (i < n.args().size()) return &n.args()[i];
  return n.kwarg(name);
}

// The dtype eager computes a comparison in: at::result_type of the operands
// (meta tensors keep 0-d vs. dimensioned; numbers are wrapped scalars).
std::optional<ScalarType> promoted(GroupBuilder& b, const Arg& x, const Arg& y) {
  auto as_tensor = [](const Arg& a) -> std::optional<at::Tensor> {
    if (!a.is_node()) return std::nullopt;
    const TensorMeta* m = tensor_meta(a.node());
    if (!m) return std::nullopt;
    return at::empty(m->sizes, at::TensorOptions().dtype(m->dtype).device(at::kMeta));
  };
  auto as_scalar = [](const Arg& a) -> std::optional<c10::Scalar> {
    if (a.is<double>()) return c10::Scalar(a.as<double>());
    if (a.is<int64_t>()) return c10::Scalar(a.as<int64_t>());
    if (a.is<bool>()) return c10::Scalar(a.as<bool>());
    return std::nullopt;
  };
  (void)b;
  auto tx = as_tensor(x), ty = as_tensor(y);
  if (tx && ty) return at::result_type(*tx, *ty);
  if (tx) {
    auto sy = as_scalar(y);
    if (sy) return at::result_type(*tx, *sy);
  }
  if (ty) {
    auto sx = as_scalar(x);
    if (sx) return at::result_type(*sx, *ty);
  }
  return std::nullopt;
}

// unary op computed in the output dtype
Emitter unary(Op o, bool floats_only = true) {
  return [o, floats_only](GroupBuilder& b, const Node& n) {
    ScalarType t = out_dtype(n);
    if ((floats_only && !is_float(t)) || t == ScalarType::Bool || n.args().size() != 1) return -1;
    return b.op(o, t, {b.operand(n.args()[0], t)});
  };
}

// add/sub (Tensor and Scalar overloads, alpha), rsub
Emitter add_sub(Op o, bool reversed = false) {
  return [o, reversed](GroupBuilder& b, const Node& n) {
    ScalarType t = out_dtype(n);
    if (t == ScalarType::Bool || n.args().size() < 2) return -1;
    int x = b.operand(n.args()[0], t);
    int y = b.operand(n.args()[1], t);
    if (const Arg* alpha = arg_at(n, 2, "alpha")) {
      if (!alpha->is<double>() && !alpha->is<int64_t>()) return -1;
      double a = alpha->is<double>() ? alpha->as<double>() : static_cast<double>(alpha->as<int64_t>());
      if (a != 1) {
        if (reversed) {
          x = b.op(Op::mul, t, {x, b.constant(a, t)});
        } else {
          y = b.op(Op::mul, t, {y, b.constant(a, t)});
        }
      }
    }
    return reversed ? b.op(o, t, {y, x}) : b.op(o, t, {x, y});
  };
}

// a binary op computed in the output dtype (mul, div, maximum, minimum, pow)
Emitter binary(Op o, bool floats_only = false) {
  return [o, floats_only](GroupBuilder& b, const Node& n) {
    ScalarType t = out_dtype(n);
    if (t == ScalarType::Bool || (floats_only && !is_float(t)) || n.args().size() != 2 || !n.kwargs().empty())
      return -1;
    return b.op(o, t, {b.operand(n.args()[0], t), b.operand(n.args()[1], t)});
  };
}

Emitter compare(Op o) {
  return [o](GroupBuilder& b, const Node& n) {
    if (n.args().size() != 2) return -1;
    auto c = promoted(b, n.args()[0], n.args()[1]);
    if (!c || !supported_dtype(*c)) return -1;
    int r = b.op(o, ScalarType::Bool, {b.operand(n.args()[0], *c), b.operand(n.args()[1], *c)});
    return b.cast(r, out_dtype(n));
  };
}

Emitter logical(Op o) {
  return [o](GroupBuilder& b, const Node& n) {
    size_t arity = o == Op::logical_not ? 1 : 2;
    if (n.args().size() != arity) return -1;
    std::vector<int> xs;
    for (const Arg& a : n.args()) xs.push_back(b.operand(a, ScalarType::Bool));
    return b.cast(b.op(o, ScalarType::Bool, xs), out_dtype(n));
  };
}

int pow_scalar(GroupBuilder& b, int x, double p, ScalarType t) {
  if (p == 1) return x;
  if (p == 2) return b.op(Op::mul, t, {x, x});
  if (p == 3) return b.op(Op::mul, t, {b.op(Op::mul, t, {x, x}), x});
  if (p == 0.5) return b.op(Op::sqrt, t, {x});
  if (p == -0.5) return b.op(Op::rsqrt, t, {x});
  if (p == -1) return b.op(Op::reciprocal, t, {x});
  if (p == -2) return b.op(Op::reciprocal, t, {b.op(Op::mul, t, {x, x})});
  return b.op(Op::pow, t, {x, b.constant(p, t)});
}

int sigmoid_of(GroupBuilder& b, int x, ScalarType t) { return b.op(Op::sigmoid, t, {x}); }

int gelu_of(GroupBuilder& b, int x, ScalarType t, bool tanh_approx) {
  int half = b.constant(0.5, t);
  int one = b.constant(1, t);
  int inner;
  if (tanh_approx) {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    int x3 = b.op(Op::mul, t, {b.op(Op::mul, t, {x, x}), x});
    int poly = b.op(Op::add, t, {x, b.op(Op::mul, t, {b.constant(0.044715, t), x3})});
    inner = b.op(Op::tanh, t, {b.op(Op::mul, t, {b.constant(0.7978845608028654, t), poly})});
  } else {
    // 0.5 x (1 + erf(x / sqrt 2))
    inner = b.op(Op::erf, t, {b.op(Op::mul, t, {x, b.constant(0.7071067811865476, t)})});
  }
  return b.op(Op::mul, t, {b.op(Op::mul, t, {half, x}), b.op(Op::add, t, {one, inner})});
}

bool none_or(const Arg* a, const std::function<bool(const Arg&)>& ok) { return !a || a->is_none() || ok(*a); }

const std::unordered_map<std::string, Emitter>& emitters() {
  static const std::unordered_map<std::string, Emitter> table = [] {
    std::unordered_map<std::string, Emitter> m;
    for (const char* name : {"aten::add.Tensor", "aten::add.Scalar"}) m[name] = add_sub(Op::add);
    for (const char* name : {"aten::sub.Tensor", "aten::sub.Scalar"}) m[name] = add_sub(Op::sub);
    for (const char* name : {"aten::rsub.Tensor", "aten::rsub.Scalar"}) m[name] = add_sub(Op::sub, true);
    for (const char* name : {"aten::mul.Tensor", "aten::mul.Scalar"}) m[name] = binary(Op::mul);
    for (const char* name : {"aten::div.Tensor", "aten::div.Scalar"}) m[name] = binary(Op::div, true);
    m["aten::maximum"] = binary(Op::maximum);
    m["aten::minimum"] = binary(Op::minimum);
    m["aten::pow.Tensor_Tensor"] = binary(Op::pow, true);
    m["aten::pow.Tensor_Scalar"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (!is_float(t) || n.args().size() != 2) return -1;
      const Arg& p = n.args()[1];
      if (!p.is<double>() && !p.is<int64_t>()) return -1;
      double e = p.is<double>() ? p.as<double>() : static_cast<double>(p.as<int64_t>());
      return pow_scalar(b, b.operand(n.args()[0], t), e, t);
    };
    m["aten::neg"] = unary(Op::neg, false);
    m["aten::abs"] = unary(Op::abs, false);
    m["aten::relu"] = unary(Op::relu, false);
    for (auto [name, op] : std::initializer_list<std::pair<const char*, Op>>{
             {"aten::sigmoid", Op::sigmoid}, {"aten::tanh", Op::tanh}, {"aten::exp", Op::exp},
             {"aten::log", Op::log}, {"aten::sin", Op::sin}, {"aten::cos", Op::cos}, {"aten::sqrt", Op::sqrt},
             {"aten::rsqrt", Op::rsqrt}, {"aten::reciprocal", Op::reciprocal}, {"aten::erf", Op::erf}})
      m[name] = unary(op);
    m["aten::square"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (t == ScalarType::Bool) return -1;
      int x = b.operand(n.args()[0], t);
      return b.op(Op::mul, t, {x, x});
    };
    for (auto [name, op] : std::initializer_list<std::pair<const char*, Op>>{
             {"eq", Op::eq}, {"ne", Op::ne}, {"lt", Op::lt}, {"le", Op::le}, {"gt", Op::gt}, {"ge", Op::ge}}) {
      m[std::string("aten::") + name + ".Tensor"] = compare(op);
      m[std::string("aten::") + name + ".Scalar"] = compare(op);
    }
    m["aten::logical_and"] = logical(Op::logical_and);
    m["aten::logical_or"] = logical(Op::logical_or);
    m["aten::logical_xor"] = logical(Op::logical_xor);
    m["aten::logical_not"] = logical(Op::logical_not);
    m["aten::where.self"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (n.args().size() != 3) return -1;
      return b.op(Op::select, t,
                  {b.operand(n.args()[0], ScalarType::Bool), b.operand(n.args()[1], t), b.operand(n.args()[2], t)});
    };
    m["aten::masked_fill.Scalar"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (n.args().size() != 3) return -1;
      return b.op(Op::select, t,
                  {b.operand(n.args()[1], ScalarType::Bool), b.operand(n.args()[2], t), b.operand(n.args()[0], t)});
    };
    auto clamp = [](GroupBuilder& b, const Node& n, const Arg* lo, const Arg* hi) {
      ScalarType t = out_dtype(n);
      if (t == ScalarType::Bool) return -1;
      int x = b.operand(n.args()[0], t);
      auto number = [](const Arg* a) { return a && (a->is<double>() || a->is<int64_t>() || a->is_node()); };
      if (lo && !lo->is_none()) {
        if (!number(lo)) return -1;
        x = b.op(Op::maximum, t, {x, b.operand(*lo, t)});
      }
      if (hi && !hi->is_none()) {
        if (!number(hi)) return -1;
        x = b.op(Op::minimum, t, {x, b.operand(*hi, t)});
      }
      return x;
    };
    m["aten::clamp"] = [clamp](GroupBuilder& b, const Node& n) {
      return clamp(b, n, arg_at(n, 1, "min"), arg_at(n, 2, "max"));
    };
    m["aten::clamp.Tensor"] = m["aten::clamp"];
    m["aten::clamp_min"] = [clamp](GroupBuilder& b, const Node& n) { return clamp(b, n, arg_at(n, 1, "min"), nullptr); };
    m["aten::clamp_max"] = [clamp](GroupBuilder& b, const Node& n) { return clamp(b, n, nullptr, arg_at(n, 1, "max")); };
    m["aten::gelu"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (!is_float(t)) return -1;
      const Arg* approx = arg_at(n, 1, "approximate");
      bool tanh_approx = false;
      if (approx && !approx->is_none()) {
        if (!approx->is<std::string>()) return -1;
        if (approx->as<std::string>() == "tanh") {
          tanh_approx = true;
        } else if (approx->as<std::string>() != "none") {
          return -1;
        }
      }
      return gelu_of(b, b.operand(n.args()[0], t), t, tanh_approx);
    };
    m["aten::silu"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (!is_float(t)) return -1;
      int x = b.operand(n.args()[0], t);
      return b.op(Op::mul, t, {x, sigmoid_of(b, x, t)});
    };
    m["aten::threshold_backward"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (n.args().size() != 3 || t == ScalarType::Bool) return -1;
      auto st = b.dtype_of(n.args()[1]);
      if (!st) return -1;
      int below = b.op(Op::le, ScalarType::Bool, {b.operand(n.args()[1], *st), b.operand(n.args()[2], *st)});
      return b.op(Op::select, t, {below, b.constant(0, t), b.operand(n.args()[0], t)});
    };
    m["aten::sigmoid_backward"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (!is_float(t) || n.args().size() != 2) return -1;
      int g = b.operand(n.args()[0], t), y = b.operand(n.args()[1], t);
      int one_minus = b.op(Op::sub, t, {b.constant(1, t), y});
      return b.op(Op::mul, t, {b.op(Op::mul, t, {g, one_minus}), y});
    };
    m["aten::tanh_backward"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (!is_float(t) || n.args().size() != 2) return -1;
      int g = b.operand(n.args()[0], t), y = b.operand(n.args()[1], t);
      return b.op(Op::mul, t, {g, b.op(Op::sub, t, {b.constant(1, t), b.op(Op::mul, t, {y, y})})});
    };
    m["aten::_to_copy"] = [](GroupBuilder& b, const Node& n) {
      if (n.args().size() != 1) return -1;
      for (const auto& [key, value] : n.kwargs()) {
        bool ok = key == "dtype" || key == "memory_format" || key == "non_blocking" ||
                  (key == "layout" && (value.is_none() || value.is<c10::Layout>())) ||
                  (key == "device" && (value.is_none() || (value.is<c10::Device>() && value.as<c10::Device>().is_cpu()))) ||
                  (key == "pin_memory" && (value.is_none() || (value.is<bool>() && !value.as<bool>())));
        if (!ok) return -1;
      }
      return b.operand(n.args()[0], out_dtype(n));
    };
    m["aten::clone"] = [](GroupBuilder& b, const Node& n) { return b.operand(n.args()[0], out_dtype(n)); };
    m["aten::fill.Scalar"] = [](GroupBuilder& b, const Node& n) {
      if (n.args().size() != 2 || !none_or(&n.args()[1], [](const Arg& a) { return !a.is_node(); })) return -1;
      return b.operand(n.args()[1], out_dtype(n));
    };
    return m;
  }();
  return table;
}

// The emitter for `node` if it is a pointwise op on supported CPU tensors.
const Emitter* pointwise_emitter(const Node* node) {
  if (node->kind() != graph::NodeKind::call_function || node->op()->is_getitem) return nullptr;
  if (!tensor_meta(node)) return nullptr;
  auto it = emitters().find(node->op()->qualified_name());
  if (it == emitters().end()) return nullptr;
  for (const Node* in : node->inputs())
    if (!tensor_meta(in)) return nullptr;
  return &it->second;
}

class Lowerer {
 public:
  Lowerer(std::shared_ptr<const graph::Graph> graph, const LoweringOptions& options) : options_(options) {
    program_.graph = std::move(graph);
  }

  graph::Expected<Program> run() {
    const graph::Graph& g = *program_.graph;
    for (const Node* n : g.nodes()) {
      switch (n->kind()) {
        case graph::NodeKind::placeholder:
          program_.input_slots.push_back(slot(n));
          break;
        case graph::NodeKind::output:
          close_group();
          break;
        case graph::NodeKind::get_attr:
          extern_step(n);
          break;
        case graph::NodeKind::call_function:
          if (auto status = visit(n); !status) return status.error();
          break;
      }
      if (!error_.empty()) return graph::Error{error_};
    }
    if (!error_.empty()) return graph::Error{error_};
    plan_releases();
    return std::move(program_);
  }

 private:
  graph::Status visit(const Node* n) {
    if (const Emitter* emit = pointwise_emitter(n)) {
      const TensorMeta* m = n->meta().tensor();
      if (group_ && group_->kernel().sizes != m->sizes) close_group();
      if (!group_) group_ = std::make_unique<GroupBuilder>(m->sizes);
      if (group_->add_member(n, *emit)) return graph::ok_status();
      if (group_->empty()) group_.reset();
    }
    // extern: runs before the open group unless it reads one of its values
    if (group_) {
      for (const Node* in : n->inputs())
        if (group_->contains(in)) {
          close_group();
          break;
        }
    }
    extern_step(n);
    return graph::ok_status();
  }

  int slot(const Node* n) {
    auto [it, fresh] = program_.slot_of.try_emplace(n, program_.num_slots);
    if (fresh) ++program_.num_slots;
    return it->second;
  }

  void extern_step(const Node* n) {
    Step s;
    s.kind = Step::Kind::extern_op;
    s.node = n;
    s.slot = slot(n);
    program_.steps.push_back(std::move(s));
  }

  void close_group() {
    if (!group_) return;
    std::unique_ptr<GroupBuilder> group = std::move(group_);
    loop::Kernel& k = group->kernel();
    Step s;
    s.kind = Step::Kind::kernel;
    bool has_relu = false;
    k.contiguous_outputs = true;
    for (const Node* member : group->members()) {
      has_relu |= member->op()->qualified_name() == "aten::relu";
      bool used_outside = false;
      for (const Node* user : member->users()) used_outside |= !group->contains(user);
      if (!used_outside) continue;
      const TensorMeta& meta = *member->meta().tensor();
      k.outputs.push_back({group->expr_of(member), meta.dtype});
      k.contiguous_outputs &= meta.is_contiguous();
      s.outputs.push_back(slot(member));
      s.output_metas.push_back(meta);
    }
    for (const Node* in : group->inputs()) s.inputs.push_back(slot(in));
    if (has_relu && options_.inject_bug == "relu_compile_error") {
      error_ = "debug_inject_bug=relu_compile_error: a fusion group contains relu";
      return;
    }
    s.fail_at_run_time = has_relu && options_.inject_bug == "relu_runtime_error";
    k.relu_plus_one = has_relu && options_.inject_bug == "relu_accuracy_error";
    k.name = "fused_" + std::to_string(program_.kernels.size());
    for (const Node* member : group->members()) k.name += "_" + member->op()->base_name();
    if (k.name.size() > 80) k.name.resize(80);
    program_.fused_nodes += static_cast<int>(group->members().size());
    s.kernel = static_cast<int>(program_.kernels.size());
    program_.kernels.push_back(std::move(k));
    program_.steps.push_back(std::move(s));
  }

  // Each slot is released after the last step that reads it (slots the
  // output node reads are kept).
  void plan_releases() {
    std::vector<int> last(program_.num_slots, -1);
    auto reads = [&](const Step& s, const std::function<void(int)>& fn) {
      if (s.kind == Step::Kind::kernel) {
        for (int i : s.inputs) fn(i);
      } else {
        for (const Node* in : s.node->inputs()) fn(program_.slot_of.at(in));
      }
    };
    for (size_t i = 0; i < program_.steps.size(); ++i)
      reads(program_.steps[i], [&](int slot) { last[slot] = static_cast<int>(i); });
    if (const Node* out = program_.graph->output_node())
      for (const Node* in : out->inputs()) last[program_.slot_of.at(in)] = static_cast<int>(program_.steps.size());
    for (int slot = 0; slot < program_.num_slots; ++slot)
      if (last[slot] >= 0 && last[slot] < static_cast<int>(program_.steps.size()))
        program_.steps[last[slot]].release.push_back(slot);
  }

  LoweringOptions options_;
  Program program_;
  std::unique_ptr<GroupBuilder> group_;
  std::string error_;
};

}  // namespace

graph::Expected<Program> lower(std::shared_ptr<const graph::Graph> graph, const LoweringOptions& options) {
  try {
    return Lowerer(std::move(graph), options).run();
  } catch (const std::exception& e) {
    return graph::Error{std::string("lowering failed: ") + e.what()};
  }
}

}  // namespace tj::jit
