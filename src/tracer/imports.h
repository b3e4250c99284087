// The import family of the tracer, as free functions over a TraceContext
// (trace_context.h; translate_imports.cpp): the module an IMPORT_NAME
// binds, when it is already in sys.modules. The opcode handlers
// (IMPORT_NAME, IMPORT_FROM) stay in the translator: they only move the
// stack.
#pragma once

#include <optional>
#include <string>

#include "tracer/trace_context.h"

namespace tj::tracer {

// `name` of a relative import (`level` dots) made absolute from the
// frame's __package__ (nullopt + unsupported, as CPython's ImportError).
std::optional<std::string> resolve_relative_import(TraceContext cx, const std::string& name, long level);
// The value `import name` (no fromlist: the top package) or `from name
// import ...` (with one) binds, for `name` at `level`; null + unsupported
// when it is not imported yet.
ValuePtr import_module(TraceContext cx, std::string name, long level, bool has_fromlist);

}  // namespace tj::tracer
