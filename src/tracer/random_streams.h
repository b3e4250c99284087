// Calls that draw from Python's or numpy's random stream, which the tracer
// does not trace (random_streams.cpp).
#pragma once

#include <Python.h>

#include <optional>
#include <string>

namespace tj::tracer {

// The reason a call of `f` is not traced when it draws from Python's or
// numpy's random stream; nullopt for other callables.
std::optional<std::string> random_stream_call(PyObject* f);

}  // namespace tj::tracer
