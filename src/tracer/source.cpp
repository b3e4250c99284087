// Source constructors and printing; see source.h.
#include "tracer/source.h"

namespace tj::tracer {

SourcePtr Source::local(int index, std::string name) {
  return std::make_shared<Source>(Source{SourceKind::local, std::move(name), index, {}, nullptr});
}
namespace {
bc::PyRef interned(const std::string& name) { return bc::PyRef::steal(PyUnicode_InternFromString(name.c_str())); }
}  // namespace

SourcePtr Source::global(std::string name) {
  bc::PyRef key = interned(name);
  return std::make_shared<Source>(Source{SourceKind::global, std::move(name), -1, std::move(key), nullptr});
}
SourcePtr Source::closure(int index, std::string name) {
  return std::make_shared<Source>(Source{SourceKind::closure, std::move(name), index, {}, nullptr});
}
SourcePtr Source::closure_cell(int index, std::string name) {
  return std::make_shared<Source>(Source{SourceKind::closure_cell, std::move(name), index, {}, nullptr});
}
SourcePtr Source::attr(SourcePtr base, std::string name) {
  if (!base) return nullptr;  // derived from an unguarded value: unguarded too
  bc::PyRef key = interned(name);
  return std::make_shared<Source>(Source{SourceKind::attr, std::move(name), -1, std::move(key), std::move(base)});
}
SourcePtr Source::item(SourcePtr base, PyObject* key) {
  if (!base) return nullptr;  // derived from an unguarded value: unguarded too
  int index = PyLong_Check(key) ? static_cast<int>(PyLong_AsLong(key)) : -1;
  return std::make_shared<Source>(Source{SourceKind::item, "", index, bc::PyRef::borrow(key), std::move(base)});
}

std::string Source::to_string() const {
  switch (kind) {
    case SourceKind::local: return "L['" + name + "']";
    case SourceKind::global: return "G['" + name + "']";
    case SourceKind::closure: return "C['" + name + "']";
    case SourceKind::closure_cell: return "Cell['" + name + "']";
    case SourceKind::attr: return base->to_string() + "." + name;
    case SourceKind::item: {
      PyObject* r = PyObject_Repr(key.get());
      const char* s = r ? PyUnicode_AsUTF8(r) : nullptr;
      std::string text = s ? s : "?";
      Py_XDECREF(r);
      PyErr_Clear();
      return base->to_string() + "[" + text + "]";
    }
  }
  return "?";
}

}  // namespace tj::tracer
