// The user-object family of the tracer, as free functions over a
// TraceContext (trace_context.h; translate_objects.cpp): instances of
// user-defined classes made in the traced frame (trace-only objects whose
// attributes live in the value), stateless torch.nn modules made from
// constants, and the dunder methods operators and builtins call on user
// objects. Rebuilding such an object after the graph is the output
// planner's (InstructionTranslator::build_fresh_object_output).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tracer/binary_ops.h"
#include "tracer/trace_context.h"

namespace tj::tracer {

// `cls(...)` made as a trace-only object with __init__ inlined (null
// without failure when `cls` is not a user class); a torch.nn module
// without state made in the frame (`nn.MSELoss()`), made for real at trace
// time.
ValuePtr construct_object(TraceContext cx, const ValuePtr& cls, std::vector<ValuePtr>& args,
                          std::vector<std::pair<std::string, ValuePtr>>& kwargs);
ValuePtr construct_stateless_module(TraceContext cx, const ValuePtr& cls, std::vector<ValuePtr>& args,
                                    std::vector<std::pair<std::string, ValuePtr>>& kwargs);
// An attribute read on such an object that it did not set itself (a
// method, classmethod, staticmethod, property or class attribute); an
// attribute write on it (false: unsupported).
ValuePtr fresh_object_attr(TraceContext cx, const ValuePtr& obj, const std::string& name);
bool store_fresh_object_attr(TraceContext cx, const ValuePtr& owner, const std::string& name, const ValuePtr& value);
// obj.<name> bound through the object's class when it is a Python method
// (null otherwise); obj.<name>(*args) through it (`handled` false when the
// class has no such method); operators between user objects (__add__,
// __radd__, __iadd__, ...; `handled` false when neither is one).
ValuePtr bound_dunder(TraceContext cx, const ValuePtr& obj, const std::string& name);
ValuePtr call_dunder(TraceContext cx, const ValuePtr& obj, const std::string& name, std::vector<ValuePtr> args,
                     bool& handled);
ValuePtr binary_dunder(TraceContext cx, bc::BinaryOpArg op, const ValuePtr& lhs, const ValuePtr& rhs, bool& handled);

// nn.Module containers read from an input (translate_inline.cpp): the items
// of a ModuleList/Sequential/ModuleDict/ParameterList/ParameterDict, wrapped
// with guards on its length and keys (nullopt: not one, or not readable).
std::optional<std::vector<ValuePtr>> module_container_items(TraceContext cx, const ValuePtr& obj);

}  // namespace tj::tracer
