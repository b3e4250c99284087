// Arg -> IValue conversion against a schema; see boxing.h.
#include "graph/boxing.h"

#include <ATen/ScalarOps.h>
#include <ATen/core/function_schema.h>
#include <ATen/core/jit_type.h>
#include <c10/util/Exception.h>

#include <new>
#include <typeinfo>

#include "graph/libtorch_messages.h"
#include "graph/op_registry.h"

namespace tj::graph::detail {

namespace {

at::Tensor wrapped_number(const c10::Scalar& s) {
  at::Tensor t = c10::scalar_to_tensor(s);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

struct Boxer {
  const Node& node;
  const ValueOf& value_of;
  const BoxOptions& options;

  Expected<c10::IValue> fail(const std::string& what, const c10::Argument& param) const {
    return Error{node.name() + " (" + node.target() + "): argument '" + param.name() + "': " + what};
  }

  Expected<c10::IValue> scalar(const c10::Scalar& s, const c10::TypePtr& type, const c10::Argument& param) const {
    switch (type->kind()) {
      case c10::TypeKind::TensorType: return c10::IValue(wrapped_number(s));
      case c10::TypeKind::FloatType: return c10::IValue(s.toDouble());
      case c10::TypeKind::IntType:
      case c10::TypeKind::SymIntType:
        if (s.isFloatingPoint()) return fail("float passed for an int", param);
        return c10::IValue(s.toLong());
      case c10::TypeKind::BoolType:
        if (!s.isBoolean()) return fail("number passed for a bool", param);
        return c10::IValue(s.toBool());
      case c10::TypeKind::ListType:
        if (s.isIntegral(false) && param.N()) return c10::IValue(std::vector<int64_t>(*param.N(), s.toLong()));
        return fail("number passed for a list", param);
      default: return c10::IValue(s);  // NumberType and anything permissive
    }
  }

  Expected<c10::IValue> list(const Arg& arg, const c10::TypePtr& type, const c10::Argument& param) const {
    auto list_type = type->cast<c10::ListType>();
    c10::TypePtr elem = list_type ? list_type->getElementType() : c10::AnyType::get();
    std::vector<c10::IValue> items;
    for (const Arg& item : arg.items()) {
      auto v = convert(item, elem, param);
      if (!v) return v;
      items.push_back(std::move(*v));
    }
    if (!list_type) return c10::IValue(c10::ivalue::Tuple::create(std::move(items)));
    auto elem_kind = elem->kind();
    if (elem_kind == c10::TypeKind::IntType || elem_kind == c10::TypeKind::SymIntType) {
      c10::List<int64_t> out;
      for (auto& v : items) {
        if (!v.isInt()) return fail("list item is not an int", param);
        out.push_back(v.toInt());
      }
      return c10::IValue(out);
    }
    if (elem_kind == c10::TypeKind::FloatType) {
      c10::List<double> out;
      for (auto& v : items) out.push_back(v.isInt() ? double(v.toInt()) : v.toDouble());
      return c10::IValue(out);
    }
    if (elem_kind == c10::TypeKind::BoolType) {
      c10::List<bool> out;
      for (auto& v : items) out.push_back(v.toBool());
      return c10::IValue(out);
    }
    if (elem_kind == c10::TypeKind::TensorType) {
      c10::List<at::Tensor> out;
      for (auto& v : items) {
        if (!v.isTensor()) return fail("list item is not a tensor", param);
        out.push_back(v.toTensor());
      }
      return c10::IValue(out);
    }
    if (auto opt = elem->cast<c10::OptionalType>(); opt && opt->getElementType()->kind() == c10::TypeKind::TensorType) {
      c10::List<c10::optional<at::Tensor>> out;
      for (auto& v : items) out.push_back(v.isNone() ? c10::optional<at::Tensor>() : v.toTensor());
      return c10::IValue(out);
    }
    c10::impl::GenericList out(elem);
    for (auto& v : items) out.push_back(std::move(v));
    return c10::IValue(out);
  }

  Expected<c10::IValue> convert(const Arg& arg, c10::TypePtr type, const c10::Argument& param) const {
    if (auto opt = type->cast<c10::OptionalType>()) {
      if (arg.is_none()) return c10::IValue();
      type = opt->getElementType();
    }
    const Arg::Value& v = arg.value();
    if (arg.is_node()) {
      const c10::IValue& value = value_of(arg.node());
      // a number node (a size, an int of the trace) for a Tensor parameter
      // (aten::true_divide.Tensor's other): a wrapped number, as a constant is
      if (type->kind() == c10::TypeKind::TensorType && (value.isInt() || value.isDouble() || value.isBool()))
        return scalar(value.toScalar(), type, param);
      return value;
    }
    if (arg.is_none()) return c10::IValue();
    if (auto* b = std::get_if<bool>(&v)) return scalar(c10::Scalar(*b), type, param);
    if (auto* i = std::get_if<int64_t>(&v)) return scalar(c10::Scalar(*i), type, param);
    if (auto* d = std::get_if<double>(&v)) return scalar(c10::Scalar(*d), type, param);
    if (auto* s = std::get_if<std::string>(&v)) return c10::IValue(*s);
    if (auto* t = std::get_if<c10::ScalarType>(&v)) return c10::IValue(static_cast<int64_t>(*t));
    if (auto* l = std::get_if<c10::Layout>(&v)) return c10::IValue(static_cast<int64_t>(*l));
    if (auto* m = std::get_if<c10::MemoryFormat>(&v)) return c10::IValue(static_cast<int64_t>(*m));
    if (auto* d = std::get_if<c10::Device>(&v)) {
      if (!options.meta_devices) return c10::IValue(*d);
      if (options.requested_device) *options.requested_device = *d;
      return c10::IValue(c10::Device(c10::kMeta));
    }
    if (arg.is_list()) return list(arg, type, param);
    return fail("unsupported constant", param);
  }
};

}  // namespace

Expected<std::vector<c10::IValue>> box_arguments(const Node& node, const ValueOf& value_of, const BoxOptions& options) {
  assert(node.op() && !node.op()->is_getitem && "box_arguments needs an ATen call");
  const c10::FunctionSchema& schema = node.op()->schema();
  const auto& params = schema.arguments();
  if (node.args().size() > params.size())
    return Error{node.name() + " (" + node.target() + "): " + std::to_string(node.args().size()) +
                 " positional arguments, the schema takes " + std::to_string(params.size())};
  Boxer boxer{node, value_of, options};
  std::vector<c10::IValue> stack;
  stack.reserve(params.size());
  size_t used_kwargs = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const c10::Argument& param = params[i];
    const Arg* arg = nullptr;
    if (i < node.args().size()) {
      arg = &node.args()[i];
    } else if ((arg = node.kwarg(param.name()))) {
      ++used_kwargs;
    }
    if (!arg) {
      if (!param.default_value()) return Error{node.name() + " (" + node.target() + "): missing argument '" + param.name() + "'"};
      c10::IValue dflt = *param.default_value();
      if (options.meta_devices && param.real_type()->kind() == c10::TypeKind::OptionalType &&
          param.real_type()->cast<c10::OptionalType>()->getElementType()->kind() == c10::TypeKind::DeviceObjType)
        dflt = c10::IValue(c10::Device(c10::kMeta));  // factory default device: CPU, made meta
      stack.push_back(std::move(dflt));
      continue;
    }
    auto v = boxer.convert(*arg, param.real_type(), param);
    if (!v) return v.error();
    stack.push_back(std::move(*v));
  }
  if (used_kwargs != node.kwargs().size())
    return Error{node.name() + " (" + node.target() + "): a keyword argument the schema does not have"};
  return stack;
}

c10::IValue unbox_returns(const Node& node, std::vector<c10::IValue>& stack) {
  size_t n = node.op()->schema().returns().size();
  if (n == 1) return std::move(stack.at(0));
  std::vector<c10::IValue> items(std::make_move_iterator(stack.begin()), std::make_move_iterator(stack.end()));
  return c10::IValue(c10::ivalue::Tuple::create(std::move(items)));
}

Expected<c10::IValue> arg_to_ivalue(const Arg& arg, const ValueOf& value_of) {
  const Arg::Value& v = arg.value();
  if (arg.is_node()) return value_of(arg.node());
  if (arg.is_none()) return c10::IValue();
  if (auto* b = std::get_if<bool>(&v)) return c10::IValue(*b);
  if (auto* i = std::get_if<int64_t>(&v)) return c10::IValue(*i);
  if (auto* d = std::get_if<double>(&v)) return c10::IValue(*d);
  if (auto* s = std::get_if<std::string>(&v)) return c10::IValue(*s);
  if (auto* t = std::get_if<c10::ScalarType>(&v)) return c10::IValue(static_cast<int64_t>(*t));
  if (auto* l = std::get_if<c10::Layout>(&v)) return c10::IValue(static_cast<int64_t>(*l));
  if (auto* m = std::get_if<c10::MemoryFormat>(&v)) return c10::IValue(static_cast<int64_t>(*m));
  if (auto* d = std::get_if<c10::Device>(&v)) return c10::IValue(*d);
  std::vector<c10::IValue> items;
  for (const Arg& item : arg.items()) {
    auto iv = arg_to_ivalue(item, value_of);
    if (!iv) return iv;
    items.push_back(std::move(*iv));
  }
  if (arg.as<ArgList>().is_tuple) return c10::IValue(c10::ivalue::Tuple::create(std::move(items)));
  c10::impl::GenericList list(c10::AnyType::get());
  for (auto& item : items) list.push_back(std::move(item));
  return c10::IValue(list);
}

Expected<c10::IValue> run_getitem(const Node& node, const ValueOf& value_of) {
  if (node.args().size() != 2 || !node.args()[0].is_node() || !node.args()[1].is<int64_t>())
    return Error{node.name() + ": getitem takes (node, int)"};
  const c10::IValue& seq = value_of(node.args()[0].node());
  int64_t index = node.args()[1].as<int64_t>();
  if (seq.isTuple()) {
    const auto& elems = seq.toTupleRef().elements();
    if (index < 0) index += static_cast<int64_t>(elems.size());
    if (index < 0 || index >= static_cast<int64_t>(elems.size())) return Error{node.name() + ": getitem index out of range"};
    return elems[index];
  }
  if (seq.isList()) {
    auto list = seq.toListRef();
    if (index < 0) index += static_cast<int64_t>(list.size());
    if (index < 0 || index >= static_cast<int64_t>(list.size())) return Error{node.name() + ": getitem index out of range"};
    return list[index];
  }
  return Error{node.name() + ": getitem on a value that is not a tuple or list"};
}

ErrorKind exception_kind(const std::exception& e) {
  if (dynamic_cast<const c10::Error*>(&e) || dynamic_cast<const std::bad_alloc*>(&e)) return ErrorKind::unsupported;
  // LibTorch's autograd throws a plain runtime_error for an op without a derivative
  if (typeid(e) == typeid(std::runtime_error) && says_derivative_not_implemented(e.what())) return ErrorKind::unsupported;
  // and its infer_size one for sizes that do not hold the elements (`x.reshape(-1, 7)`: eager's RuntimeError)
  if (typeid(e) == typeid(std::runtime_error) && says_invalid_shape(e.what())) return ErrorKind::unsupported;
  return ErrorKind::internal;
}

Error exception_error(const std::string& prefix, const std::exception& e) {
  return Error{prefix + short_message(e), exception_kind(e)};
}

std::string short_message(const std::exception& e) {
  std::string msg;
  if (auto* ce = dynamic_cast<const c10::Error*>(&e)) msg = ce->what_without_backtrace();
  else msg = e.what();
  // Keep the first sentence of LibTorch's long dispatcher messages.
  for (const char* cut : {"\n", " This could be because"}) {
    auto pos = msg.find(cut);
    if (pos != std::string::npos) msg = msg.substr(0, pos);
  }
  return msg;
}

}  // namespace tj::graph::detail
