// Imports inside traced code: IMPORT_NAME of a module that is already in
// sys.modules (absolute, or relative to the frame's package) and
// IMPORT_FROM. A library module (the standard library, dist-packages) is a
// value read without guards, as torch's own attributes are; a user module
// is an input read through `sys.modules['name']` (SourceKind::module), so
// its identity and the attributes the trace reads are guarded.
#include "tracer/imports.h"
#include "tracer/py_str.h"
#include "tracer/translate_call.h"
#include "tracer/translator.h"

namespace tj::tracer {

std::optional<std::string> resolve_relative_import(TraceContext cx, const std::string& name, long level) {
  // importlib's resolution: the package from the module's __package__,
  // one component dropped per level beyond the first.
  PyObject* package = PyDict_GetItemString(cx.frame_globals(), "__package__");
  if (!package || !PyUnicode_Check(package) || PyUnicode_GET_LENGTH(package) == 0)
    return cx.unsupported("a relative import in a module without a parent package (ImportError)"), std::nullopt;
  std::string base = utf8(package);
  for (long i = 1; i < level; ++i) {
    size_t dot = base.rfind('.');
    if (dot == std::string::npos)
      return cx.unsupported("a relative import beyond the top-level package (ImportError)"), std::nullopt;
    base.resize(dot);
  }
  return name.empty() ? base : base + "." + name;
}

// `import a.b` / `from a import b` of a module that is already imported
// (importing for the first time runs code: that is left to CPython).
ValuePtr import_module(TraceContext cx, std::string name, long level, bool has_fromlist) {
  const long depth = level;
  if (depth > 0) {
    std::optional<std::string> absolute = resolve_relative_import(cx, name, depth);
    if (!absolute) return nullptr;
    name = std::move(*absolute);
  }
  // `import a.b` binds the top package; `from a.b import c` (a fromlist) gets a.b.
  std::string wanted = !has_fromlist ? name.substr(0, name.find('.')) : name;
  PyObject* module = PyDict_GetItemString(PyImport_GetModuleDict(), name.c_str());
  PyObject* result = module ? PyDict_GetItemString(PyImport_GetModuleDict(), wanted.c_str()) : nullptr;
  if (!result || !PyModule_Check(result)) return cx.unsupported("import of '" + name + "', which is not imported yet"), nullptr;
  PyRef file = PyRef::steal(PyObject_GetAttrString(result, "__file__"));
  std::string path = file && PyUnicode_Check(file.get()) ? utf8(file.get()) : "";
  clear_expected_error({PyExc_AttributeError});  // a built-in module has no __file__
  if (path.empty() || path.starts_with("/usr/lib/python3")) return Value::module(result);
  return cx.wrap_input(result, Source::module(wanted));
}

// `import a.b` / `from a import b` of a module that is already imported
// (importing for the first time runs code: that is left to CPython).
bool InstructionTranslator::op_import_name(const bc::Instruction& inst) {
  ValuePtr fromlist = pop();
  ValuePtr level = pop();
  if (!level->is_constant() || !PyLong_Check(level->obj.get()) || !fromlist->is_constant())
    return unsupported("an import with computed arguments");
  ValuePtr v = import_module(*this, utf8(inst.argval.get()), PyLong_AsLong(level->obj.get()),
                             fromlist->obj.get() != Py_None);
  if (!v) return false;
  push(std::move(v));
  return true;
}

bool InstructionTranslator::op_import_from(const bc::Instruction& inst) {
  ValuePtr v = get_attr(*this, peek(), utf8(inst.argval.get()));
  if (!v) return false;
  push(std::move(v));
  return true;
}

}  // namespace tj::tracer
