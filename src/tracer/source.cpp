// Source constructors and printing; see source.h.
#include "tracer/source.h"

namespace tj::tracer {

SourcePtr Source::local(int index, std::string name) {
  return std::make_shared<Source>(Source{SourceKind::local, std::move(name), index, {}, nullptr});
}
namespace {
PyRef interned(const std::string& name) { return PyRef::steal(PyUnicode_InternFromString(name.c_str())); }
}  // namespace

SourcePtr Source::global(std::string name) {
  PyRef key = interned(name);
  return std::make_shared<Source>(Source{SourceKind::global, std::move(name), -1, std::move(key), nullptr});
}
SourcePtr Source::module(std::string name) {
  PyRef key = interned(name);
  return std::make_shared<Source>(Source{SourceKind::module, std::move(name), -1, std::move(key), nullptr});
}
SourcePtr Source::call(SourcePtr base, std::string method) {
  if (!base) return nullptr;
  PyRef key = interned(method);
  return std::make_shared<Source>(Source{SourceKind::call, std::move(method), -1, std::move(key), std::move(base)});
}
SourcePtr Source::closure(int index, std::string name) {
  return std::make_shared<Source>(Source{SourceKind::closure, std::move(name), index, {}, nullptr});
}
SourcePtr Source::closure_cell(int index, std::string name) {
  return std::make_shared<Source>(Source{SourceKind::closure_cell, std::move(name), index, {}, nullptr});
}
SourcePtr Source::attr(SourcePtr base, std::string name) {
  if (!base) return nullptr;  // derived from an unguarded value: unguarded too
  PyRef key = interned(name);
  return std::make_shared<Source>(Source{SourceKind::attr, std::move(name), -1, std::move(key), std::move(base)});
}
SourcePtr Source::item(SourcePtr base, PyObject* key) {
  if (!base) return nullptr;  // derived from an unguarded value: unguarded too
  int index = PyLong_Check(key) ? static_cast<int>(PyLong_AsLong(key)) : -1;
  return std::make_shared<Source>(Source{SourceKind::item, "", index, PyRef::borrow(key), std::move(base)});
}

SourcePtr Source::item(SourcePtr base, PyObject* key, std::string label) {
  if (!base) return nullptr;
  return std::make_shared<Source>(Source{SourceKind::item, std::move(label), -1, PyRef::borrow(key), std::move(base)});
}

namespace {
std::string source_text(const Source& s) {
  switch (s.kind) {
    case SourceKind::local: return "L['" + s.name + "']";
    case SourceKind::global: return "G['" + s.name + "']";
    case SourceKind::closure: return "C['" + s.name + "']";
    case SourceKind::closure_cell: return "Cell['" + s.name + "']";
    case SourceKind::module: return "sys.modules['" + s.name + "']";
    case SourceKind::call: return s.base->to_string() + "." + s.name + "()";
    case SourceKind::attr: return s.base->to_string() + "." + s.name;
    case SourceKind::item: {
      if (!s.name.empty()) return s.base->to_string() + "[" + s.name + "]";
      PyRef r = PyRef::steal(PyObject_Repr(s.key.get()));
      const char* text = r ? PyUnicode_AsUTF8(r.get()) : nullptr;
      std::string out = s.base->to_string() + "[" + (text ? text : "?") + "]";
      PyErr_Clear();  // a key's repr for a printed source: any failure prints "?"
      return out;
    }
  }
  return "?";
}
}  // namespace

const std::string& Source::to_string() const {
  if (text_.empty()) text_ = source_text(*this);
  return text_;
}

}  // namespace tj::tracer
