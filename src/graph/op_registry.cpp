// OpRegistry: ATen overloads from c10::Dispatcher, overload selection by
// schema, and op traits from alias annotations plus small name tables.
#include "graph/op_registry.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/function_schema.h>
#include <ATen/core/jit_type.h>

namespace tj::graph {

std::string_view arg_kind_name(ArgKind kind) {
  switch (kind) {
    case ArgKind::Tensor: return "Tensor";
    case ArgKind::Int: return "int";
    case ArgKind::Float: return "float";
    case ArgKind::Bool: return "bool";
    case ArgKind::Scalar: return "Scalar";
    case ArgKind::None: return "None";
    case ArgKind::String: return "str";
    case ArgKind::ScalarType: return "ScalarType";
    case ArgKind::Device: return "Device";
    case ArgKind::Layout: return "Layout";
    case ArgKind::MemoryFormat: return "MemoryFormat";
    case ArgKind::IntList: return "int[]";
    case ArgKind::FloatList: return "float[]";
    case ArgKind::BoolList: return "bool[]";
    case ArgKind::TensorList: return "Tensor[]";
    case ArgKind::OptionalTensorList: return "Tensor?[]";
  }
  return "?";
}

std::string OpInfo::qualified_name() const { return overload.empty() ? name : name + "." + overload; }

std::string OpInfo::base_name() const {
  auto pos = name.find("::");
  return pos == std::string::npos ? name : name.substr(pos + 2);
}

std::string OpInfo::stem_name() const {
  std::string stem = base_name();
  if (stem.size() > 1 && stem.back() == '_' && stem.substr(0, 2) != "__") stem.pop_back();
  return stem;
}

std::string OpInfo::python_target() const {
  if (is_builtin()) return name;
  auto pos = name.find("::");
  std::string ns = name.substr(0, pos);
  return ns + "." + base_name() + "." + (overload.empty() ? "default" : overload);
}

const c10::OperatorHandle& OpInfo::handle() const {
  assert(handle_ && "a builtin has no ATen operator");
  return *handle_;
}

const c10::FunctionSchema& OpInfo::schema() const { return handle().schema(); }

// ---- traits ----

namespace {

const std::set<std::string>& pointwise_names() {
  static const std::set<std::string> names = {
      "abs", "acos", "acosh", "add", "addcdiv", "addcmul", "asin", "asinh", "atan", "atan2", "atanh",
      "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "ceil", "clamp", "clamp_max", "clamp_min",
      "clone", "cos", "cosh", "div", "elu", "eq", "erf", "erfc", "erfinv", "exp", "exp2", "expm1", "fill",
      "floor", "floor_divide", "fmod", "frac", "ge", "gelu", "gt", "hardsigmoid", "hardswish", "hardtanh",
      "isinf", "isnan", "le", "leaky_relu", "lerp", "log", "log10", "log1p", "log2", "logical_and",
      "logical_not", "logical_or", "logical_xor", "lt", "masked_fill", "maximum", "minimum", "mish", "mul",
      "nan_to_num", "ne", "neg", "pow", "reciprocal", "relu", "remainder", "round", "rsqrt", "rsub",
      "sigmoid", "sign", "silu", "sin", "sinh", "softplus", "sqrt", "square", "sub", "tan", "tanh",
      "threshold", "trunc", "where", "_to_copy", "__and__", "__or__", "__xor__"};
  return names;
}

const std::set<std::string>& reduction_names() {
  static const std::set<std::string> names = {
      "all", "amax", "amin", "any", "argmax", "argmin", "count_nonzero", "logsumexp", "max", "mean",
      "min", "nansum", "norm", "prod", "std", "std_mean", "sum", "var", "var_mean", "linalg_vector_norm"};
  return names;
}

// Binary overloads of reduction names that are elementwise.
bool is_pointwise_overload_of_reduction(const std::string& base, const std::string& overload) {
  return (base == "max" || base == "min") && overload == "other";
}

const std::set<std::string>& random_names() {
  static const std::set<std::string> names = {
      "alpha_dropout", "bernoulli", "cauchy", "dropout", "exponential", "feature_alpha_dropout",
      "feature_dropout", "geometric", "log_normal", "multinomial", "native_dropout", "normal", "poisson",
      "rand", "rand_like", "randint", "randint_like", "randn", "randn_like", "random", "randperm", "rrelu",
      "rrelu_with_noise", "uniform"};
  return names;
}

OpTraits compute_traits(const OpInfo& op) {
  const c10::FunctionSchema& schema = op.schema();
  OpTraits t;
  std::string base = op.base_name();
  std::string stem = op.stem_name();

  t.mutates = schema.is_mutable();
  for (const c10::Argument& a : schema.arguments()) {
    if (a.is_out()) t.out = true;
    if (a.type()->kind() == c10::TypeKind::OptionalType || a.type()->kind() == c10::TypeKind::GeneratorType) {
      c10::TypePtr inner = a.type();
      if (auto opt = inner->cast<c10::OptionalType>()) inner = opt->getElementType();
      if (inner->kind() == c10::TypeKind::GeneratorType) t.random = true;
    }
  }
  const auto& args = schema.arguments();
  t.inplace = !t.out && !args.empty() && args[0].alias_info() && args[0].alias_info()->isWrite() &&
              base.back() == '_';
  for (const c10::Argument& r : schema.returns())
    if (r.alias_info() && !r.alias_info()->isWrite()) t.view = true;

  if (random_names().count(stem)) t.random = true;
  // _linalg_check_errors, which linalg.cholesky & co. call after the work.
  t.check = schema.returns().empty() && !t.mutates;
  t.backward = op.name == "tracejit::autograd_grad";  // graph/autograd_grad.h
  if (pointwise_names().count(stem) || is_pointwise_overload_of_reduction(stem, op.overload)) t.pointwise = true;
  else if (reduction_names().count(stem)) t.reduction = true;
  return t;
}

// ---- overload matching ----

constexpr int kReject = std::numeric_limits<int>::max() / 4;

bool is_int_type(const c10::TypePtr& t) {
  return t->kind() == c10::TypeKind::IntType || t->kind() == c10::TypeKind::SymIntType;
}

bool list_of(const c10::TypePtr& t, c10::TypeKind elem) {
  auto list = t->cast<c10::ListType>();
  if (!list) return false;
  auto e = list->getElementType();
  if (elem == c10::TypeKind::IntType) return is_int_type(e);
  return e->kind() == elem;
}

bool list_of_optional_tensor(const c10::TypePtr& t) {
  auto list = t->cast<c10::ListType>();
  if (!list) return false;
  auto opt = list->getElementType()->cast<c10::OptionalType>();
  return opt && opt->getElementType()->kind() == c10::TypeKind::TensorType;
}

// Python's binding rules for a few arithmetic ops (python_arg_parser.cpp,
// `should_allow_numbers_as_tensors`; their `.Scalar` overloads are not bound
// in Python): a Python number is accepted for a Tensor parameter, as a 0-d
// wrapped number, and the Tensor overload wins, so `t * 2.0` is
// `mul.Tensor` (autograd's MulBackward0), as in eager.
bool numbers_as_tensors(std::string_view name) {
  static const std::set<std::string, std::less<>> names = {
      "aten::add",          "aten::add_",         "aten::sub",      "aten::sub_",      "aten::subtract",
      "aten::subtract_",    "aten::mul",          "aten::mul_",     "aten::multiply",  "aten::multiply_",
      "aten::div",          "aten::div_",         "aten::divide",   "aten::divide_",   "aten::true_divide",
      "aten::true_divide_", "aten::floor_divide", "aten::floor_divide_"};
  return names.count(name) > 0;
}

bool is_number(ArgKind kind) {
  return kind == ArgKind::Int || kind == ArgKind::Float || kind == ArgKind::Bool || kind == ArgKind::Scalar;
}

// The cost of passing an argument of `kind` to parameter `param`, or kReject.
int match_cost(ArgKind kind, const c10::Argument& param, bool number_as_tensor) {
  if (number_as_tensor && is_number(kind) && param.real_type()->kind() == c10::TypeKind::TensorType) return 0;
  c10::TypePtr type = param.real_type();
  bool optional = false;
  if (auto opt = type->cast<c10::OptionalType>()) {
    type = opt->getElementType();
    optional = true;
  }
  c10::TypeKind k = type->kind();
  bool number_list_of_n = param.N().has_value();
  switch (kind) {
    case ArgKind::None: return optional || k == c10::TypeKind::NoneType ? 0 : kReject;
    case ArgKind::Tensor: return k == c10::TypeKind::TensorType ? 0 : kReject;
    case ArgKind::Int:
      if (is_int_type(type)) return 0;
      if (k == c10::TypeKind::FloatType || k == c10::TypeKind::NumberType) return 1;
      if (number_list_of_n && list_of(type, c10::TypeKind::IntType)) return 1;
      if (k == c10::TypeKind::TensorType) return 3;
      return kReject;
    case ArgKind::Float:
      if (k == c10::TypeKind::FloatType) return 0;
      if (k == c10::TypeKind::NumberType) return 1;
      if (k == c10::TypeKind::TensorType) return 3;
      return kReject;
    case ArgKind::Bool:
      if (k == c10::TypeKind::BoolType) return 0;
      if (k == c10::TypeKind::NumberType) return 1;
      if (k == c10::TypeKind::TensorType) return 3;
      return kReject;
    case ArgKind::Scalar:
      if (k == c10::TypeKind::NumberType) return 0;
      if (k == c10::TypeKind::FloatType) return 1;
      if (k == c10::TypeKind::TensorType) return 3;
      return kReject;
    case ArgKind::String: return k == c10::TypeKind::StringType ? 0 : kReject;
    case ArgKind::ScalarType: return k == c10::TypeKind::ScalarTypeType ? 0 : kReject;
    case ArgKind::Device: return k == c10::TypeKind::DeviceObjType ? 0 : kReject;
    case ArgKind::Layout: return k == c10::TypeKind::LayoutType ? 0 : kReject;
    case ArgKind::MemoryFormat: return k == c10::TypeKind::MemoryFormatType ? 0 : kReject;
    case ArgKind::IntList:  // ints where floats are wanted (F.interpolate's scale_factors [2, 2]): boxing converts
      if (list_of(type, c10::TypeKind::IntType)) return 0;
      return list_of(type, c10::TypeKind::FloatType) ? 1 : kReject;
    case ArgKind::FloatList: return list_of(type, c10::TypeKind::FloatType) ? 0 : kReject;
    case ArgKind::BoolList: return list_of(type, c10::TypeKind::BoolType) ? 0 : kReject;
    case ArgKind::TensorList:
      if (list_of(type, c10::TypeKind::TensorType)) return 0;
      return list_of_optional_tensor(type) ? 1 : kReject;
    case ArgKind::OptionalTensorList: return list_of_optional_tensor(type) ? 0 : kReject;
  }
  return kReject;
}

int schema_cost(const c10::FunctionSchema& schema, const std::vector<ArgKind>& positional,
                const std::vector<std::pair<std::string, ArgKind>>& kwargs, bool number_as_tensor) {
  const auto& params = schema.arguments();
  std::vector<bool> given(params.size(), false);
  int cost = 0;
  size_t p = 0;
  // One rejected argument rejects the overload (summing several rejections
  // would overflow into a "cheap" negative cost: aten::lstm.data chosen
  // for lstm.input's arguments).
  for (ArgKind kind : positional) {
    if (p >= params.size() || params[p].kwarg_only()) return kReject;
    int c = match_cost(kind, params[p], number_as_tensor);
    if (c >= kReject) return kReject;
    cost += c;
    given[p++] = true;
  }
  for (const auto& [name, kind] : kwargs) {
    auto index = schema.argumentIndexWithName(name);
    if (!index || given[*index]) return kReject;
    int c = match_cost(kind, params[*index], number_as_tensor);
    if (c >= kReject) return kReject;
    cost += c;
    given[*index] = true;
  }
  for (size_t i = 0; i < params.size(); ++i)
    if (!given[i] && !params[i].default_value()) return kReject;
  return cost;
}

}  // namespace

// ---- registry ----

OpRegistry& OpRegistry::instance() {
  static OpRegistry* registry = new OpRegistry();  // never destroyed: OpInfo pointers live forever
  return *registry;
}

OpRegistry::OpRegistry() {
  getitem_ = std::make_unique<OpInfo>();
  getitem_->name = "getitem";
  getitem_->is_getitem = true;
  autograd_function_ = std::make_unique<OpInfo>();
  autograd_function_->name = "autograd_function";
  autograd_function_->is_autograd_function = true;
  static const char* const sym_names[] = {"",       "sym_size", "sym_item", "sym_add", "sym_sub", "sym_mul", "sym_floordiv", "sym_mod",
                                          "sym_pow", "sym_eq", "sym_ne",   "sym_lt",  "sym_le",  "sym_gt",  "sym_ge"};
  for (size_t i = 0; i < std::size(sym_names); ++i) {
    auto info = std::make_unique<OpInfo>();
    info->name = sym_names[i];
    info->sym = static_cast<SymOp>(i);
    sym_.push_back(std::move(info));
  }
}

const OpInfo& OpRegistry::getitem() { return *getitem_; }

const OpInfo& OpRegistry::autograd_function() { return *autograd_function_; }

const OpInfo& OpRegistry::sym(SymOp op) { return *sym_.at(static_cast<size_t>(op)); }

void OpRegistry::index_overloads_locked() {
  overloads_.clear();
  for (const c10::OperatorName& op : c10::Dispatcher::singleton().getAllOpNames())
    overloads_[op.name].push_back(op.overload_name);
  for (auto& [name, list] : overloads_) std::sort(list.begin(), list.end());
}

std::vector<std::string> OpRegistry::overloads(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = overloads_.find(std::string(name));
  if (it == overloads_.end()) {
    index_overloads_locked();
    it = overloads_.find(std::string(name));
    if (it == overloads_.end()) return {};
  }
  return it->second;
}

Expected<const OpInfo*> OpRegistry::get_locked(const std::string& name, const std::string& overload) {
  std::string key = overload.empty() ? name : name + "." + overload;
  auto it = ops_.find(key);
  if (it != ops_.end()) return static_cast<const OpInfo*>(it->second.get());
  auto handle = c10::Dispatcher::singleton().findSchema(c10::OperatorName(name, overload));
  if (!handle) return Error{"unknown operator " + key};
  auto info = std::make_unique<OpInfo>();
  info->name = name;
  info->overload = overload;
  info->handle_ = std::make_shared<const c10::OperatorHandle>(*handle);
  info->traits = compute_traits(*info);
  const OpInfo* raw = info.get();
  ops_.emplace(key, std::move(info));
  return raw;
}

Expected<const OpInfo*> OpRegistry::get(std::string_view spelled) {
  if (spelled == "getitem") return &getitem();
  if (spelled == "autograd_function") return &autograd_function();
  for (size_t i = 1; i < sym_.size(); ++i)
    if (spelled == sym_[i]->name) return static_cast<const OpInfo*>(sym_[i].get());
  std::string s(spelled);
  std::string name, overload;
  if (auto colons = s.find("::"); colons != std::string::npos) {
    auto dot = s.find('.', colons);
    name = s.substr(0, dot);
    overload = dot == std::string::npos ? "" : s.substr(dot + 1);
  } else {
    // Python spelling: ns.op.overload
    auto first = s.find('.');
    auto last = s.rfind('.');
    if (first == std::string::npos || first == last) return Error{"cannot parse operator name '" + s + "'"};
    name = s.substr(0, first) + "::" + s.substr(first + 1, last - first - 1);
    overload = s.substr(last + 1);
    if (overload == "default") overload.clear();
  }
  std::lock_guard<std::mutex> lock(mu_);
  return get_locked(name, overload);
}

Expected<const OpInfo*> OpRegistry::lookup(std::string_view name, const std::vector<ArgKind>& positional,
                                           const std::vector<std::pair<std::string, ArgKind>>& kwargs) {
  std::string key(name);
  key += '(';
  for (ArgKind kind : positional) key += static_cast<char>('a' + static_cast<int>(kind));
  for (const auto& [kw, kind] : kwargs) key += "," + kw + "=" + static_cast<char>('a' + static_cast<int>(kind));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = chosen_.find(key); it != chosen_.end()) return it->second;
  }
  std::vector<std::string> candidates = overloads(name);
  if (candidates.empty()) return Error{"unknown operator " + std::string(name)};
  std::lock_guard<std::mutex> lock(mu_);
  const OpInfo* best = nullptr;
  int best_cost = kReject;
  for (const std::string& overload : candidates) {  // sorted, "" first: ties keep the earlier
    auto info = get_locked(std::string(name), overload);
    if (!info) continue;
    int cost = schema_cost((*info)->schema(), positional, kwargs, numbers_as_tensors(name));
    if (cost < best_cost) {
      best = *info;
      best_cost = cost;
    }
  }
  if (best) {
    chosen_.emplace(std::move(key), best);
    return best;
  }
  std::string msg = "no overload of " + std::string(name) + " accepts (";
  for (size_t i = 0; i < positional.size(); ++i) msg += (i ? ", " : "") + std::string(arg_kind_name(positional[i]));
  for (const auto& [kw, kind] : kwargs) msg += ", " + kw + "=" + std::string(arg_kind_name(kind));
  msg += ")";
  return Error{msg};
}

}  // namespace tj::graph
