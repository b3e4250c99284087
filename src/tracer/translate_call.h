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

// Methods of lists and dicts created in (or read by) the frame, and of
// tuples and sets (sets go to call_set_method). Null + unsupported when
// the method is not modelled.
ValuePtr call_container_method(TraceContext t, const ValuePtr& self, const std::string& name, std::vector<ValuePtr>& args);

// A logging.Logger's debug/info/warning/error/critical/exception/log or
// isEnabledFor on a logger that is off for that level: no effect, guarded on
// the logger staying off; `handled` false otherwise (translate_warnings.cpp).
ValuePtr call_disabled_logger(InstructionTranslator& t, const ValuePtr& fn, const std::vector<ValuePtr>& args,
                              bool& handled);

}  // namespace tj::tracer
