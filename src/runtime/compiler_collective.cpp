// The compiler collective; see compiler_collective.h.
#include "runtime/compiler_collective.h"

#include <algorithm>

#include "support/py_errors.h"
#include "support/py_ref.h"

namespace tj::runtime {

namespace {
std::string describe_codes(const std::vector<CollectiveState>& states) {
  std::string out;
  for (size_t r = 0; r < states.size(); ++r) out += (r ? ", " : "") + std::string("rank ") + std::to_string(r) + ": " + states[r].code;
  return out;
}
bool g_stopped = false;
}  // namespace

CollectiveDecision merge_collective_states(const std::vector<CollectiveState>& states) {
  CollectiveDecision d;
  for (const CollectiveState& s : states)
    if (s.code != states.front().code) {
      d.mismatch = describe_codes(states);
      return d;
    }
  for (size_t r = 0; r < states.size(); ++r) {
    const CollectiveState& s = states[r];
    if (!s.unchanged_reason.empty() && d.unchanged_rank < 0) {
      d.unchanged_rank = static_cast<int>(r);
      d.unchanged_reason = s.unchanged_reason;
    }
    if (s.break_at >= 0 && (d.break_at < 0 || s.break_at < d.break_at)) {
      d.break_at = s.break_at;
      d.break_rank = static_cast<int>(r);
      d.break_reason = s.break_reason;
    }
    for (const auto& [source, dims] : s.dynamic) {
      auto& merged = d.dynamic[source];
      merged.resize(std::max(merged.size(), dims.size()), false);
      for (size_t dim = 0; dim < dims.size(); ++dim) merged[dim] = merged[dim] || dims[dim];
    }
    for (const auto& [source, sizes] : s.sizes) {
      for (size_t o = 0; o < states.size(); ++o) {
        auto other = states[o].sizes.find(source);
        if (o == r || other == states[o].sizes.end() || other->second.size() != sizes.size()) continue;
        for (size_t dim = 0; dim < sizes.size(); ++dim) {
          if (other->second[dim] == sizes[dim]) continue;
          auto& dims = d.dynamic[source];
          dims.resize(sizes.size(), false);
          dims[dim] = true;
        }
      }
    }
  }
  return d;
}

std::string compare_trace_outcomes(const std::vector<CollectiveState>& outcomes) {
  auto gives_up = [](const CollectiveState& s) { return !s.unchanged_reason.empty(); };
  for (const CollectiveState& s : outcomes) {
    const CollectiveState& first = outcomes.front();
    if (s.code != first.code) return "different frames (" + describe_codes(outcomes) + ")";
    if (s.break_at == first.break_at && gives_up(s) == gives_up(first)) continue;
    std::string out;
    for (size_t r = 0; r < outcomes.size(); ++r) {
      const CollectiveState& o = outcomes[r];
      out += (r ? ", " : "") + std::string("rank ") + std::to_string(r) + ": " +
             (gives_up(o) ? "gives up" : o.break_at >= 0 ? "breaks at instruction " + std::to_string(o.break_at) : "no break");
    }
    return out;
  }
  return "";
}

void stop_compiler_collectives() { g_stopped = true; }

namespace {

// torch.distributed when it is imported and usable, else null (no error).
PyRef distributed_module() {
  PyObject* module = PyDict_GetItemString(PyImport_GetModuleDict(), "torch.distributed");  // borrowed
  if (!module) return {};
  bool ok = PyRef::steal(PyObject_CallMethod(module, "is_available", nullptr)).get() == Py_True &&
            PyRef::steal(PyObject_CallMethod(module, "is_initialized", nullptr)).get() == Py_True;
  // torch.distributed asked as a probe: any failure means "not in use", but
  // a Ctrl-C whose handler ran inside these calls stays set for the caller.
  clear_unless_interruption();
  return ok ? PyRef::borrow(module) : PyRef();
}

// {source: [item, ...]} as a new dict, each item a new reference made by
// `make`; null with a Python error set.
template <class T, class Make>
PyRef dict_of_lists(const std::map<std::string, std::vector<T>>& from, Make make) {
  PyRef dict = PyRef::steal(PyDict_New());
  if (!dict) return {};
  for (const auto& [source, items] : from) {
    PyRef list = PyRef::steal(PyList_New(static_cast<Py_ssize_t>(items.size())));
    if (!list) return {};
    for (size_t i = 0; i < items.size(); ++i) {
      PyObject* item = make(items[i]);  // stolen by PyList_SET_ITEM
      if (!item) return {};
      PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(i), item);
    }
    if (PyDict_SetItemString(dict.get(), source.c_str(), list.get()) < 0) return {};
  }
  return dict;
}

// The same back from a gathered dict (absent or malformed: nothing).
template <class T, class Read>
void read_dict_of_lists(PyObject* dict, std::map<std::string, std::vector<T>>& to, Read read) {
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (dict && PyDict_Check(dict) && PyDict_Next(dict, &pos, &key, &value)) {
    if (!PyUnicode_Check(key) || !PyList_Check(value)) continue;
    std::vector<T>& items = to[PyUnicode_AsUTF8(key)];
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); ++i) items.push_back(read(PyList_GET_ITEM(value, i)));
  }
}

// This rank's state as a dict for all_gather_object; null with a Python error set.
PyRef to_python(const CollectiveState& s) {
  PyRef sizes = dict_of_lists(s.sizes, [](int64_t v) { return PyLong_FromLongLong(v); });
  PyRef dynamic = sizes ? dict_of_lists(s.dynamic, [](bool v) { return PyBool_FromLong(v); }) : PyRef();
  if (!dynamic) return {};
  return PyRef::steal(Py_BuildValue("{s:s,s:O,s:O,s:i,s:s,s:s}", "code", s.code.c_str(), "sizes", sizes.get(),
                                    "dynamic", dynamic.get(), "break_at", s.break_at, "break_reason",
                                    s.break_reason.c_str(), "unchanged_reason", s.unchanged_reason.c_str()));
}

std::string text_item(PyObject* dict, const char* key) {
  PyObject* v = PyDict_GetItemString(dict, key);
  const char* s = v && PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : nullptr;
  return s ? s : "";
}

// One rank's gathered state; false (with a Python error) when it is not one.
bool from_python(PyObject* obj, CollectiveState& s) {
  PyObject* sizes = PyDict_Check(obj) ? PyDict_GetItemString(obj, "sizes") : nullptr;
  PyObject* at = PyDict_Check(obj) ? PyDict_GetItemString(obj, "break_at") : nullptr;
  if (!sizes || !PyDict_Check(sizes) || !at || !PyLong_Check(at)) {
    PyErr_SetString(PyExc_RuntimeError, "tracejit: the compiler collective gathered a malformed state");
    return false;
  }
  s.break_at = static_cast<int>(PyLong_AsLong(at));
  s.code = text_item(obj, "code");
  s.break_reason = text_item(obj, "break_reason");
  s.unchanged_reason = text_item(obj, "unchanged_reason");
  read_dict_of_lists(sizes, s.sizes, [](PyObject* v) { return static_cast<int64_t>(PyLong_AsLongLong(v)); });
  read_dict_of_lists(PyDict_GetItemString(obj, "dynamic"), s.dynamic, [](PyObject* v) { return v == Py_True; });
  return !PyErr_Occurred();
}

}  // namespace

bool compiler_collectives_on(int setting) {
  if (setting == 0 || g_stopped) return false;
  PyRef dist = distributed_module();
  if (!dist) return false;
  if (setting > 0) return true;
  PyRef size = PyRef::steal(PyObject_CallMethod(dist.get(), "get_world_size", nullptr));
  bool on = size && PyLong_Check(size.get()) && PyLong_AsLong(size.get()) > 1;
  clear_unless_interruption();  // as above: the collective is off
  return on;
}

std::optional<std::vector<CollectiveState>> gather_collective_states(const CollectiveState& local) {
  PyRef dist = distributed_module();
  if (!dist) {
    PyErr_SetString(PyExc_RuntimeError, "tracejit: the compiler collective needs an initialized torch.distributed");
    return std::nullopt;
  }
  PyRef size = PyRef::steal(PyObject_CallMethod(dist.get(), "get_world_size", nullptr));
  long world = size && PyLong_Check(size.get()) ? PyLong_AsLong(size.get()) : -1;
  PyRef gathered = PyRef::steal(world > 0 ? PyList_New(world) : nullptr);
  for (long i = 0; gathered && i < world; ++i) PyList_SET_ITEM(gathered.get(), i, Py_NewRef(Py_None));
  PyRef mine = gathered ? to_python(local) : PyRef();
  PyRef r = PyRef::steal(mine ? PyObject_CallMethod(dist.get(), "all_gather_object", "OO", gathered.get(), mine.get())
                              : nullptr);
  std::vector<CollectiveState> states(r ? static_cast<size_t>(world) : 0);
  bool ok = static_cast<bool>(r);
  for (long i = 0; ok && i < world; ++i)
    ok = from_python(PyList_GET_ITEM(gathered.get(), i), states[static_cast<size_t>(i)]);
  if (!ok) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "tracejit: the compiler collective failed");
    return std::nullopt;
  }
  return states;
}

}  // namespace tj::runtime
