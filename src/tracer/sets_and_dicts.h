// The set and dict families of the tracer, as free functions over a
// TraceContext (trace_context.h): they see the values they are given and
// the context's few operations, not the translator.
//
// Sets (translate_sets.cpp): a set of constants is a constant value over a
// real Python set (copy-on-write); a set with tensors or modules in it is a
// keyed set, a dict value over an empty set. Dicts (dict_keys.cpp): keys
// are constants (by ==), tensors and modules (by identity);
// OrderedDict/defaultdict made in the frame are dict values over an empty
// instance of their type. Every function returns null (or false, or -1
// where said) with the failure set when the trace cannot go on.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tracer/binary_ops.h"
#include "tracer/trace_context.h"

namespace tj::tracer {

// A set (frozenset when `frozen`) of these items: of their constants, or a
// keyed set when one of them is not a constant.
ValuePtr make_set(TraceContext cx, const std::vector<ValuePtr>& items, bool frozen);
ValuePtr make_keyed_set(TraceContext cx, const std::vector<ValuePtr>& items, bool frozen);
// `self.name(*args)` of a set value; mutators change `self` (journaled).
ValuePtr call_set_method(TraceContext cx, const ValuePtr& self, const std::string& name, std::vector<ValuePtr>& args);
ValuePtr call_keyed_set_method(TraceContext cx, const ValuePtr& self, const std::string& name, std::vector<ValuePtr>& args);
// Adds `item` to a keyed set unless it is in it; false with the failure set.
bool keyed_set_insert(TraceContext cx, Value& set, const ValuePtr& item);
// `s | t`, `s & t`, `s - t`, `s ^ t` with a keyed set among them (null
// without failure when they are not both sets); `s |= t` and the like
// (null without failure when `op` is none of them).
ValuePtr keyed_set_binary_op(TraceContext cx, bc::BinaryOp op, const ValuePtr& lhs, const ValuePtr& rhs);
ValuePtr set_inplace_op(TraceContext cx, bc::BinaryOp op, const ValuePtr& lhs, const ValuePtr& rhs);

// The canonical key value for `key` (null + unsupported when it cannot be
// a key); its index in `dict` (-1 when absent); d[k] of an absent key (a
// defaultdict inserts its factory's value, others raise KeyError:
// unsupported); OrderedDict(...) / defaultdict(...) of these arguments.
ValuePtr dict_key(TraceContext cx, const ValuePtr& key);
int find_dict_key(TraceContext cx, const Value& dict, const ValuePtr& key);
ValuePtr dict_missing(TraceContext cx, const ValuePtr& dict, const ValuePtr& key);
ValuePtr make_typed_dict(TraceContext cx, PyObject* type, const std::vector<ValuePtr>& args,
                         const std::vector<std::pair<std::string, ValuePtr>>& kwargs);

}  // namespace tj::tracer
