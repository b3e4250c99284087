// `module.name` looked up once and kept for the life of the process
// (torch.Tensor, torch.nn.Module, functools.partial, ...): a borrowed
// reference, or null (no Python error left set) when it does not exist
// (ImportError, AttributeError). Any other failure (an import interrupted
// or raising while it runs) is left set for the caller's reporting path
// and not remembered: the next call looks again. Needs the GIL.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "support/py_errors.h"

namespace tj {

namespace detail {
// The last lookups by the addresses of their two strings (call sites pass
// literals: the same addresses each time), checked against the text they
// were made with, so that a reused address never answers for other text.
// Ahead of the map by text: the tracer asks for a few types many times per
// instruction, and building two std::strings per question showed in the
// trace's profile (issue 44).
struct AttrHit {
  const char* module = nullptr;
  const char* name = nullptr;
  std::string module_text, name_text;
  PyObject* attr = nullptr;
};
inline AttrHit* attr_hits() {
  static auto* hits = new AttrHit[64];  // never freed
  return hits;
}
inline AttrHit& attr_hit_slot(const char* module, const char* name) {
  auto h = reinterpret_cast<uintptr_t>(module) * 31u + reinterpret_cast<uintptr_t>(name);
  return attr_hits()[(h ^ (h >> 7) ^ (h >> 13)) & 63u];
}
}  // namespace detail

inline PyObject* cached_module_attr(const char* module, const char* name) {
  detail::AttrHit& slot = detail::attr_hit_slot(module, name);
  if (slot.module == module && slot.name == name && slot.module_text == module && slot.name_text == name)
    return slot.attr;
  static auto* cache = new std::map<std::pair<std::string, std::string>, PyObject*>();  // never freed
  auto key = std::make_pair(std::string(module), std::string(name));
  if (auto it = cache->find(key); it != cache->end()) {
    slot = detail::AttrHit{module, name, key.first, key.second, it->second};
    return it->second;
  }
  PyObject* m = PyImport_ImportModule(module);
  PyObject* attr = m ? PyObject_GetAttrString(m, name) : nullptr;  // the cache keeps this reference
  Py_XDECREF(m);
  if (!clear_expected_error({PyExc_ImportError, PyExc_AttributeError})) return nullptr;
  (*cache)[key] = attr;
  return attr;
}

// Whether `obj`'s exact type is `module.name` (looked up once): an
// identity check, never a comparison of type names.
inline bool has_exact_type(PyObject* obj, const char* module, const char* name) {
  PyObject* type = cached_module_attr(module, name);
  return type && reinterpret_cast<PyObject*>(Py_TYPE(obj)) == type;
}

// The runtime's callable wrappers (tracejit.compile's CompiledFunction,
// tracejit.disable's DisabledFunction), by their types in `_tracejit`.
inline bool is_compiled_function(PyObject* obj) { return has_exact_type(obj, "_tracejit", "CompiledFunction"); }
inline bool is_disabled_function(PyObject* obj) { return has_exact_type(obj, "_tracejit", "DisabledFunction"); }

// A numpy scalar (np.float32(0.5), np.int64(3), np.bool_(True): an
// instance of numpy.number or numpy.bool_, not an array): torch takes one
// as the Python number its `item()` gives.
inline bool is_numpy_scalar(PyObject* obj) {
  if (PyLong_CheckExact(obj) || PyFloat_CheckExact(obj) || PyBool_Check(obj)) return false;
  PyObject* number = cached_module_attr("numpy", "number");
  PyObject* bool_type = cached_module_attr("numpy", "bool_");
  if (!number || !bool_type) return false;  // no numpy: no numpy scalar either
  return reinterpret_cast<PyObject*>(Py_TYPE(obj)) == bool_type ||
         PyType_IsSubtype(Py_TYPE(obj), reinterpret_cast<PyTypeObject*>(number));
}

// The `builtins` module (borrowed, kept for the life of the process).
inline PyObject* builtins_module() {
  static PyObject* module = PyImport_ImportModule("builtins");  // never freed
  return module;
}

}  // namespace tj
