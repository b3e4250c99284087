// What the call and attribute handlers share (translate_call.cpp: CALL and
// call_value's dispatch; translate_getattr.cpp: LOAD_ATTR, LOAD_METHOD,
// STORE_ATTR; translate_containers.cpp: methods of lists and dicts).
// Internal to the tracer's handler files.
#pragma once

#include <string>
#include <vector>

#include "tracer/translator.h"

namespace tj::tracer {

// Immutable builtin values whose methods may be called at trace time
// (None, numbers, strings, tuples, bytes, ranges, slices, dtypes, devices,
// torch.Size). `o` borrowed.
bool is_immutable_constant(PyObject* o);
// A collections.namedtuple class with its generated __new__ (translate_call.cpp).
bool is_plain_namedtuple_type(PyObject* type);

// Methods of lists and dicts created in (or read by) the frame, and of
// tuples and sets (sets go to call_set_method). Null + unsupported when
// the method is not modelled.
ValuePtr call_container_method(TraceContext t, const ValuePtr& self, const std::string& name, std::vector<ValuePtr>& args);

// Calls of all/any, map/filter, next, min/max/sorted with a key,
// functools.reduce and itertools (translate_iterables.cpp), dispatched by
// the callable's identity; `handled` false when `fn` is none of them.
ValuePtr call_iterable_function(TraceContext cx, PyObject* fn, std::vector<ValuePtr>& args,
                                std::vector<std::pair<std::string, ValuePtr>>& kwargs, bool& handled);

// An attribute read on a value of any kind (LOAD_ATTR, LOAD_METHOD,
// getattr()): tensors, structseq fields, modules, classes and functions
// (guarded through their sources), objects (nn.Module members read from
// their tables, a class's own __getattr__ traced, bound methods)
// (translate_getattr.cpp). Null with the failure set.
ValuePtr get_attr(TraceContext cx, const ValuePtr& obj, const std::string& name);

// `copy.deepcopy(v)` (translate_copy.cpp): a clone of a tensor outside
// autograd, new containers of copied items, constants copied for real.
ValuePtr call_deepcopy(TraceContext cx, const std::vector<ValuePtr>& args,
                       const std::vector<std::pair<std::string, ValuePtr>>& kwargs);

// Calls of context managers the tracer models (torch.no_grad(), ...,
// contextlib.nullcontext, torch.autocast) and of their __exit__: the
// result, or null with `handled` false when `fn` is none of them
// (translate_with.cpp).
ValuePtr call_context_manager(TraceContext cx, const ValuePtr& fn, const std::vector<ValuePtr>& args,
                              const std::vector<std::pair<std::string, ValuePtr>>& kwargs, bool& handled);

// The seeds (translate_with.cpp), before any random op of the graph:
// torch.manual_seed(n), a `manual_seed` side effect; torch.seed(), a `seed`
// side effect whose result is torch.initial_seed() read after the graph
// (InstructionTranslator::build_seed_output).
ValuePtr call_manual_seed(TraceContext cx, const std::vector<ValuePtr>& args,
                          const std::vector<std::pair<std::string, ValuePtr>>& kwargs);
ValuePtr call_torch_seed(TraceContext cx, const std::vector<ValuePtr>& args,
                         const std::vector<std::pair<std::string, ValuePtr>>& kwargs);

// warnings.warn(message, category, stacklevel): a side effect replayed in
// program order after the graph (translate_warnings.cpp).
ValuePtr call_warn(TraceContext cx, const std::vector<ValuePtr>& args,
                   const std::vector<std::pair<std::string, ValuePtr>>& kwargs);

// A logging.Logger's debug/info/warning/error/critical/exception/log or
// isEnabledFor on a logger that is off for that level: no effect, guarded on
// the logger staying off; `handled` false otherwise (translate_warnings.cpp).
ValuePtr call_disabled_logger(InstructionTranslator& t, const ValuePtr& fn, const std::vector<ValuePtr>& args,
                              bool& handled);

}  // namespace tj::tracer
