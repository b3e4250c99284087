// A list input the frame only appends to (append_log.cpp): issue 42's
// `losses.append(loss)` in a training step, traced without guarding the
// list's length or items.
#pragma once

#include <Python.h>

#include "tracer/bytecode.h"
#include "tracer/guards.h"
#include "tracer/values.h"

namespace tj::tracer {

// Whether `v` is such a log: an object value of the list whose `items` are
// the values the trace appended (a full list value once materialized).
bool is_append_log(const Value& v);

// Whether `v` is a dict value holding such logs (a dict read into `d["k"].append`).
bool has_append_logs(const Value& v);

// Whether the instruction being traced (`code->instructions[ip]`) loads a
// value that its next instruction reads `.append` of.
bool loads_for_append(const bc::DecodedCode* code, size_t ip, const bc::Instruction* current);

// Whether the instruction being traced loads a dict whose item under a
// constant str key is read straight into `.append` (`log["losses"].append(x)`:
// the load, LOAD_CONST, BINARY_SUBSCR, LOAD_METHOD append).
bool loads_dict_for_append(const bc::DecodedCode* code, size_t ip, const bc::Instruction* current);

// The log value of list `obj` read from `source` (its type guarded).
ValuePtr new_append_log(GuardSet& guards, PyObject* obj, const SourcePtr& source);

// Makes log `v` the full list value `full` (the list's own items, wrapped
// and guarded by the caller) followed by the logged values, in place.
void materialize_append_log(const ValuePtr& v, const ValuePtr& full);

}  // namespace tj::tracer
