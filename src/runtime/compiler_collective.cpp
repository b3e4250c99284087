// The compiler collective; see compiler_collective.h.
#include "runtime/compiler_collective.h"

#include <algorithm>

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

// New reference to torch.distributed when it is imported and usable, else null (no error).
PyObject* distributed_module() {
  PyObject* module = PyDict_GetItemString(PyImport_GetModuleDict(), "torch.distributed");  // borrowed
  if (!module) return nullptr;
  PyObject* available = PyObject_CallMethod(module, "is_available", nullptr);
  bool ok = available == Py_True;
  Py_XDECREF(available);
  if (ok) {
    PyObject* initialized = PyObject_CallMethod(module, "is_initialized", nullptr);
    ok = initialized == Py_True;
    Py_XDECREF(initialized);
  }
  PyErr_Clear();
  return ok ? Py_NewRef(module) : nullptr;
}

// {source: [item, ...]} as a new dict, each item made by `make`.
template <class T, class Make>
PyObject* dict_of_lists(const std::map<std::string, std::vector<T>>& from, Make make) {
  PyObject* dict = PyDict_New();
  for (const auto& [source, items] : from) {
    PyObject* list = PyList_New(static_cast<Py_ssize_t>(items.size()));
    for (size_t i = 0; i < items.size(); ++i) PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), make(items[i]));
    PyDict_SetItemString(dict, source.c_str(), list);
    Py_DECREF(list);
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

PyObject* to_python(const CollectiveState& s) {
  PyObject* sizes = dict_of_lists(s.sizes, [](int64_t v) { return PyLong_FromLongLong(v); });
  PyObject* dynamic = dict_of_lists(s.dynamic, [](bool v) { return PyBool_FromLong(v); });
  PyObject* out = Py_BuildValue("{s:s,s:N,s:N,s:i,s:s,s:s}", "code", s.code.c_str(), "sizes", sizes, "dynamic", dynamic,
                                "break_at", s.break_at, "break_reason", s.break_reason.c_str(), "unchanged_reason",
                                s.unchanged_reason.c_str());
  return out;
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
  PyObject* dist = distributed_module();
  if (!dist) return false;
  bool on = true;
  if (setting < 0) {
    PyObject* size = PyObject_CallMethod(dist, "get_world_size", nullptr);
    on = size && PyLong_Check(size) && PyLong_AsLong(size) > 1;
    Py_XDECREF(size);
    PyErr_Clear();
  }
  Py_DECREF(dist);
  return on;
}

std::optional<std::vector<CollectiveState>> gather_collective_states(const CollectiveState& local) {
  PyObject* dist = distributed_module();
  if (!dist) {
    PyErr_SetString(PyExc_RuntimeError, "tracejit: the compiler collective needs an initialized torch.distributed");
    return std::nullopt;
  }
  PyObject* size = PyObject_CallMethod(dist, "get_world_size", nullptr);
  long world = size && PyLong_Check(size) ? PyLong_AsLong(size) : -1;
  Py_XDECREF(size);
  PyObject* gathered = world > 0 ? PyList_New(world) : nullptr;
  for (long i = 0; gathered && i < world; ++i) PyList_SET_ITEM(gathered, i, Py_NewRef(Py_None));
  PyObject* mine = gathered ? to_python(local) : nullptr;
  PyObject* r = mine ? PyObject_CallMethod(dist, "all_gather_object", "OO", gathered, mine) : nullptr;
  Py_XDECREF(r);
  Py_XDECREF(mine);
  Py_DECREF(dist);
  std::vector<CollectiveState> states(r ? static_cast<size_t>(world) : 0);
  bool ok = r != nullptr;
  for (long i = 0; ok && i < world; ++i) ok = from_python(PyList_GET_ITEM(gathered, i), states[static_cast<size_t>(i)]);
  Py_XDECREF(gathered);
  if (!ok) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "tracejit: the compiler collective failed");
    return std::nullopt;
  }
  return states;
}

}  // namespace tj::runtime
