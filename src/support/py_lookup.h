// `module.name` looked up once and kept for the life of the process
// (torch.Tensor, torch.nn.Module, functools.partial, ...): a borrowed
// reference, or null (no Python error left set) when it does not exist.
// Needs the GIL.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <map>
#include <string>
#include <utility>

namespace tj {

inline PyObject* cached_module_attr(const char* module, const char* name) {
  static auto* cache = new std::map<std::pair<std::string, std::string>, PyObject*>();  // never freed
  auto key = std::make_pair(std::string(module), std::string(name));
  if (auto it = cache->find(key); it != cache->end()) return it->second;
  PyObject* m = PyImport_ImportModule(module);
  PyObject* attr = m ? PyObject_GetAttrString(m, name) : nullptr;  // the cache keeps this reference
  Py_XDECREF(m);
  PyErr_Clear();
  (*cache)[key] = attr;
  return attr;
}

}  // namespace tj
