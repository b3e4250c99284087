// Guard printing and de-duplication; see guards.h.
#include "tracer/guards.h"

#include <sstream>

#include <ATen/core/Tensor.h>

#include "support/py_errors.h"

namespace tj::tracer {

namespace {
std::string repr(PyObject* obj) {
  PyRef r = PyRef::steal(obj ? PyObject_Repr(obj) : nullptr);
  const char* s = r ? PyUnicode_AsUTF8(r.get()) : nullptr;
  std::string out = s ? s : "?";
  PyErr_Clear();  // a repr for printed guards: any failure prints "?"
  return out;
}

std::string type_name(PyObject* type) {
  if (!type || !PyType_Check(type)) return "?";
  return reinterpret_cast<PyTypeObject*>(type)->tp_name;
}

std::string ints(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

// Functions and modules print without addresses: kind and qualified name.
std::string identity(PyObject* obj) {
  if (PyModule_Check(obj)) return "<module " + std::string(PyModule_GetName(obj) ? PyModule_GetName(obj) : "?") + ">";
  PyRef qual = PyRef::steal(PyObject_GetAttrString(obj, "__qualname__"));
  if (!qual) {
    PyErr_Clear();  // a name for printed guards, best effort: __name__ then
    qual = PyRef::steal(PyObject_GetAttrString(obj, "__name__"));
  }
  const char* text = qual && PyUnicode_Check(qual.get()) ? PyUnicode_AsUTF8(qual.get()) : nullptr;
  std::string name = text ? text : "";
  PyErr_Clear();  // as above: the type's name then
  if (name.empty()) return "<" + std::string(Py_TYPE(obj)->tp_name) + ">";
  return "<" + std::string(Py_TYPE(obj)->tp_name) + " " + name + ">";
}
}  // namespace

std::string Guard::to_string() const {
  std::string src = source ? source->to_string() : "";
  switch (kind) {
    case GuardKind::tensor_match: {
      if (dynamic_dims.empty())
        return "TENSOR_MATCH " + src + " " + std::string(c10::toString(tensor.dtype)) + ints(tensor.sizes) +
               " stride=" + ints(tensor.strides) + " " + tensor.device.str() +
               (tensor.requires_grad ? " requires_grad" : "");
      std::string sizes;
      for (size_t d = 0; d < tensor.sizes.size(); ++d)
        sizes += (d ? ", " : "") + (dynamic_dims[d] ? std::string(">=2") : std::to_string(tensor.sizes[d]));
      return "TENSOR_MATCH " + src + " " + std::string(c10::toString(tensor.dtype)) + "[" + sizes +
             "] dense in the traced dim order " + tensor.device.str() + (tensor.requires_grad ? " requires_grad" : "");
    }
    case GuardKind::type_match: return "TYPE_MATCH " + src + " " + type_name(expected.get());
    case GuardKind::id_match:
      return "ID_MATCH " + src + " " + identity(expected.get()) + (no_module_hooks ? " and NO_MODULE_HOOKS" : "");
    case GuardKind::const_eq: return "CONST_EQ " + src + " == " + repr(expected.get());
    case GuardKind::length: return "LEN " + src + " " + type_name(expected.get()) + " == " + std::to_string(length);
    case GuardKind::dict_keys: return "DICT_KEYS " + src + " == " + repr(expected.get());
    case GuardKind::grad_mode: return std::string("GRAD_MODE ") + (flag ? "enabled" : "disabled");
    case GuardKind::default_dtype: return "DEFAULT_DTYPE " + std::string(c10::toString(dtype));
    case GuardKind::no_aliasing: {
      std::string text = "NO_ALIASING";
      for (size_t i = 0; i < sources.size(); ++i)
        text += (i ? ", " : " ") + sources[i]->to_string() + "#" + std::to_string(storage_ids[i]);
      return text;
    }
    case GuardKind::autocast_cpu:
      return flag ? "AUTOCAST_CPU enabled " + std::string(c10::toString(dtype)) : "AUTOCAST_CPU disabled";
    case GuardKind::same_object: return "SAME_OBJECT " + src + " is " + (other ? other->to_string() : "?");
    case GuardKind::dynamic_int: return flag ? "DYNAMIC_FLOAT " + src + " float" : "DYNAMIC_INT " + src + " int in [-2**31, 2**31)";
    case GuardKind::not_grad_leaf: return "NOT_GRAD_LEAF " + src + " (in-place ops on it allowed in grad mode)";
    case GuardKind::no_module_hooks: return "NO_MODULE_HOOKS " + src;
    case GuardKind::module_match: {
      static const char* const kTables[] = {"__dict__", "_parameters", "_buffers", "_modules"};
      std::string text = "MODULE_MATCH " + src + " " + type_name(expected.get());
      for (size_t i = 0; i < absent.size(); ++i)
        text += std::string(i ? ", " : " without ") + kTables[static_cast<int>(absent[i].first)] + "['" +
                (PyUnicode_Check(absent[i].second.get()) ? PyUnicode_AsUTF8(absent[i].second.get()) : "?") + "']";
      return text + (no_module_hooks ? " and NO_MODULE_HOOKS" : "");
    }
    case GuardKind::distinct_objects: {
      std::string text = "DISTINCT_OBJECTS";
      for (size_t i = 0; i < sources.size(); ++i) text += (i ? ", " : " ") + sources[i]->to_string();
      return text;
    }
    case GuardKind::number_fact:
      return "NUMBER_FACT (" + (number_fact ? number_fact->text : std::string("?")) + ") is " +
             (number_fact && number_fact->outcome ? "True" : "False");
    case GuardKind::size_facts: {
      std::string text = "SIZE_FACTS";
      for (size_t i = 0; size_facts && i < size_facts->descriptions.size(); ++i)
        text += (i ? ", " : " ") + size_facts->descriptions[i];
      return text;
    }
  }
  return "?";
}

GradState grad_state(const at::Tensor& t) {
  if (!t.requires_grad()) return GradState::no_grad;
  return t.is_leaf() || (t.is_view() && t._base().is_leaf()) ? GradState::leaf : GradState::computed;
}

PyRef apply_number_steps(PyObject* v, const std::vector<NumberStep>& steps) {
  PyRef value = PyRef::borrow(v);
  for (const NumberStep& s : steps) {
    if (!value) break;
    PyObject* a = s.constant_first ? s.constant.get() : value.get();
    PyObject* b = s.constant_first ? value.get() : s.constant.get();
    switch (s.op) {
      case NumberOp::add: value = PyRef::steal(PyNumber_Add(a, b)); break;
      case NumberOp::subtract: value = PyRef::steal(PyNumber_Subtract(a, b)); break;
      case NumberOp::multiply: value = PyRef::steal(PyNumber_Multiply(a, b)); break;
      case NumberOp::true_divide: value = PyRef::steal(PyNumber_TrueDivide(a, b)); break;
      case NumberOp::floor_divide: value = PyRef::steal(PyNumber_FloorDivide(a, b)); break;
      case NumberOp::remainder: value = PyRef::steal(PyNumber_Remainder(a, b)); break;
      case NumberOp::power: value = PyRef::steal(PyNumber_Power(a, b, Py_None)); break;
      case NumberOp::negate: value = PyRef::steal(PyNumber_Negative(value.get())); break;
      case NumberOp::call: value = PyRef::steal(PyObject_CallOneArg(s.constant.get(), value.get())); break;
    }
  }
  if (!value) clear_unless_interruption();  // x / 0 now: the fact does not hold, the retrace meets the error
  return value;
}

int number_fact_outcome(const NumberFact& fact, PyObject* number) {
  PyRef v = apply_number_steps(number, fact.steps);
  if (!v) return -1;
  PyObject* a = fact.number_right ? fact.other.get() : v.get();
  PyObject* b = fact.number_right ? v.get() : fact.other.get();
  const int r = PyObject_RichCompareBool(a, b, fact.compare_op);
  if (r < 0) clear_unless_interruption();  // as above
  return r;
}

bool fits_dynamic_number(PyObject* v, bool is_float) { return is_float ? PyFloat_CheckExact(v) : fits_dynamic_int(v); }

bool fits_dynamic_int(PyObject* v) {
  if (!PyLong_CheckExact(v)) return false;
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
  if (x == -1 && PyErr_Occurred()) PyErr_Clear();  // an exact int sets only the overflow flag: never reached
  constexpr long long kLimit = 1LL << 31;
  return overflow == 0 && x >= -kLimit && x < kLimit;
}

bool module_hooks_empty(PyObject* module) {
  static PyObject* const names[] = {PyUnicode_InternFromString("_forward_pre_hooks"),
                                    PyUnicode_InternFromString("_forward_hooks"),
                                    PyUnicode_InternFromString("_backward_hooks")};  // kept for the process
  for (PyObject* name : names) {
    if (!name) return false;
    PyRef table = PyRef::steal(PyObject_GetAttr(module, name));
    Py_ssize_t n = !table ? -1 : PyDict_Check(table.get()) ? PyDict_GET_SIZE(table.get()) : PyObject_Length(table.get());
    if (n != 0) {
      clear_unless_interruption();  // an unreadable table: not known to be empty
      return false;
    }
  }
  return true;
}

bool module_names_absent(PyObject* module, const std::vector<std::pair<ModuleTable, PyRef>>& absent) {
  if (absent.empty()) return true;
  static PyObject* const tables[] = {nullptr, PyUnicode_InternFromString("_parameters"),
                                     PyUnicode_InternFromString("_buffers"),
                                     PyUnicode_InternFromString("_modules")};  // kept for the process
  PyRef dict = PyRef::steal(PyObject_GenericGetDict(module, nullptr));
  if (!dict || !PyDict_Check(dict.get())) {
    clear_unless_interruption();  // no __dict__: not the module the trace read
    return false;
  }
  for (const auto& [table, name] : absent) {
    PyObject* t = dict.get();
    if (table != ModuleTable::instance_dict) {
      t = PyDict_GetItemWithError(dict.get(), tables[static_cast<int>(table)]);  // borrowed
      if (!t || !PyDict_Check(t)) {
        clear_unless_interruption();
        return false;
      }
    }
    if (PyDict_GetItemWithError(t, name.get()) || PyErr_Occurred()) {
      clear_unless_interruption();  // a str key's lookup does not raise; kept for an interruption
      return false;
    }
  }
  return true;
}

void GuardSet::add(Guard guard) {
  // A value without a source (read from torch's own modules, which are
  // taken as fixed) needs no guard; global-state guards have no source.
  bool global_state = guard.kind == GuardKind::grad_mode || guard.kind == GuardKind::default_dtype ||
                      guard.kind == GuardKind::autocast_cpu || guard.kind == GuardKind::no_aliasing ||
                      guard.kind == GuardKind::size_facts || guard.kind == GuardKind::distinct_objects;
  if (!guard.source && !global_state) return;
  std::string key = std::to_string(static_cast<int>(guard.kind)) + " " + (guard.source ? guard.source->to_string() : "");
  if (guard.number_fact) key += " " + guard.number_fact->text;  // one guard per comparison
  if (!keys_.emplace(std::move(key), guards_.size()).second) return;
  guards_.push_back(std::move(guard));
}

Guard* GuardSet::find(GuardKind kind, const Source& source) {
  auto it = keys_.find(std::to_string(static_cast<int>(kind)) + " " + source.to_string());
  return it == keys_.end() ? nullptr : &guards_[it->second];
}

std::string GuardSet::to_string() const {
  std::ostringstream out;
  for (const auto& g : guards_) out << g.to_string() << "\n";
  return out.str();
}

}  // namespace tj::tracer
