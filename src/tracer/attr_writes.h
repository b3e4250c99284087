// The attribute-write family of the tracer, as free functions over a
// TraceContext (trace_context.h): what the frame wrote to attributes of the
// objects, classes, functions and tensors it was given (attributes.cpp) and
// what it deleted (translate_delattr.cpp). Pending writes live on the
// written value (`attr_overrides`, replayed after the graph as SideEffects),
// so every later read in the trace sees them. STORE_ATTR and DELETE_ATTR
// (InstructionTranslator::op_store_attr, op_delete_attr), setattr() and
// delattr() (builtins.h) and attribute reads (get_attr) come here.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tracer/trace_context.h"

namespace tj::tracer {

// The value `obj.name` has because of an earlier write in the frame (null:
// none; null with the failure set: cannot be decided); `obj.__dict__` as
// one value with the object's attributes, the writes so far in it.
ValuePtr attr_written_in_frame(TraceContext cx, const ValuePtr& obj, const std::string& name);
ValuePtr instance_dict_of(TraceContext cx, const ValuePtr& obj, ValuePtr real_dict);
// `owner.name = value` on an object, class or function read from an input
// (false: unsupported).
bool record_attr_store(TraceContext cx, const ValuePtr& owner, const std::string& name, const ValuePtr& value);
// `t.grad = v` (None, or a tensor eager accepts) and `t.data = v` on an
// input tensor: later reads see `v`, and the write is replayed after the
// graph (false: unsupported).
bool store_tensor_attr(TraceContext cx, const ValuePtr& owner, const std::string& name, const ValuePtr& value);
// `p.requires_grad = wanted` on an input leaf that requires grad (or did
// before the frame set it False): see attributes.cpp (false: unsupported).
bool toggle_leaf_requires_grad(TraceContext cx, const ValuePtr& owner, bool wanted);
// Whether the frame set requires_grad False on `v`, such a leaf.
bool leaf_requires_grad_toggled(const ValuePtr& v);
// Whether `v` stands for a tensor that requires grad though its node does
// not (its .data assigned, or values requiring grad written into it); true
// (and the trace failed) when `op` in grad mode reads a leaf that requires
// grad whose .data the trace assigned.
bool data_replaced_requires_grad(TraceContext cx, const ValuePtr& v);
bool data_replaced_leaf_used(TraceContext cx, const std::string& op, const std::vector<ValuePtr>& args);
// `del o.k` (false: unsupported) / `delattr(o, "k")` (null: unsupported).
bool delete_attr(TraceContext cx, const ValuePtr& owner, const std::string& name);
ValuePtr call_delattr(TraceContext cx, const std::vector<ValuePtr>& args, const TraceContext::Kwargs& kwargs);

}  // namespace tj::tracer
