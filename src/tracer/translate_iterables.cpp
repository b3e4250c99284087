// Calls that consume or build iterables, evaluated by the tracer itself:
// all/any, map/filter, next, min/max/sorted with a key, functools.reduce,
// itertools.chain/chain.from_iterable/islice/product.
//
// Python's map, filter and itertools objects are lazy; the tracer computes
// their items when they are made, as it already does for generators (a
// generator's body is run to its end by the inliner). The result is an
// iterator value over those items, so `list(map(...))`, `for ... in
// filter(...)`, `next(...)` and `sum(chain(...))` all read it. Iterators
// they consume (an iterator value passed as an argument) move to where
// Python leaves them: all/any stop at the deciding item, next() takes one,
// map/filter/chain/product take everything. Functions passed to them
// (lambdas, user functions, torch functions) are called through
// `call_value`, so they are inlined or become graph ops like any call.
#include <algorithm>
#include <cassert>
#include <cstring>

#include "support/py_lookup.h"
#include "tracer/py_str.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

using Kwargs = std::vector<std::pair<std::string, ValuePtr>>;

PyObject* builtin_named(const char* name) { return PyDict_GetItemString(PyEval_GetBuiltins(), name); }

const ValuePtr* find_kwarg(const Kwargs& kwargs, const char* name) {
  for (const auto& [k, v] : kwargs)
    if (k == name) return &v;
  return nullptr;
}

bool only_kwargs(const Kwargs& kwargs, std::initializer_list<const char*> allowed) {
  for (const auto& [k, v] : kwargs)
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; })) return false;
  return true;
}

// itertools.<name>, a type the itertools module keeps alive.
PyTypeObject* itertools_type(const char* name) {
  PyObject* type = cached_module_attr("itertools", name);
  assert(type && PyType_Check(type) && "itertools defines its iterator types");
  return reinterpret_cast<PyTypeObject*>(type);
}

// `obj` is the bound classmethod `type.name` of the type `type`.
bool is_bound_classmethod(PyObject* obj, PyObject* type, const char* name) {
  if (!type || !PyCFunction_Check(obj) || PyCFunction_GET_SELF(obj) != type) return false;
  return std::strcmp(reinterpret_cast<PyCFunctionObject*>(obj)->m_ml->ml_name, name) == 0;
}

std::optional<long> constant_int(const ValuePtr& v) {
  if (!v->is_constant() || !PyLong_Check(v->obj.get())) return std::nullopt;
  long r = PyLong_AsLong(v->obj.get());
  if (PyErr_Occurred()) {
    clear_expected_error({PyExc_OverflowError});  // beyond a long: not one we unroll
    return std::nullopt;
  }
  return r;
}

}  // namespace

void InstructionTranslator::consume(const ValuePtr& v, size_t n) {
  if (v->kind != ValueKind::iterator || n == 0) return;
  journal(v);
  v->position = std::min(v->items.size(), v->position + n);
}

ValuePtr InstructionTranslator::call_iterable_function(PyObject* f, std::vector<ValuePtr>& args, Kwargs& kwargs,
                                                      bool& handled) {
  handled = true;
  auto items = [&](const ValuePtr& v, const char* who) { return iterable_items(v, who); };

  if ((f == builtin_named("all") || f == builtin_named("any")) && args.size() == 1 && kwargs.empty() &&
      !args[0]->is_python_constant()) {
    bool want_all = f == builtin_named("all");
    auto xs = items(args[0], want_all ? "all" : "any");
    if (!xs) return nullptr;
    // Python stops at the first item that decides the answer.
    for (size_t i = 0; i < xs->size(); ++i) {
      auto truth = truthiness((*xs)[i]);
      if (!truth) return nullptr;
      if (*truth != want_all) {
        if (!may_stop_after(args[0], i + 1, want_all ? "all()" : "any()")) return nullptr;
        consume(args[0], i + 1);
        return Value::constant(want_all ? Py_False : Py_True);
      }
    }
    consume(args[0], xs->size());
    return Value::constant(want_all ? Py_True : Py_False);
  }

  if (f == reinterpret_cast<PyObject*>(&PyMap_Type) && args.size() >= 2 && kwargs.empty()) {
    std::vector<std::vector<ValuePtr>> lists;
    size_t n = SIZE_MAX;
    for (size_t i = 1; i < args.size(); ++i) {
      auto xs = items(args[i], "map");
      if (!xs) return nullptr;
      n = std::min(n, xs->size());
      lists.push_back(std::move(*xs));
    }
    std::vector<ValuePtr> out;
    for (size_t k = 0; k < n; ++k) {
      std::vector<ValuePtr> call_args;
      for (const auto& l : lists) call_args.push_back(l[k]);
      ValuePtr r = call_value(args[0], std::move(call_args), {});
      if (!r) return nullptr;
      out.push_back(std::move(r));
    }
    for (size_t i = 1; i < args.size(); ++i) consume(args[i], n);
    return Value::iterator(std::move(out), &PyMap_Type);
  }

  if (f == reinterpret_cast<PyObject*>(&PyFilter_Type) && args.size() == 2 && kwargs.empty()) {
    auto xs = items(args[1], "filter");
    if (!xs) return nullptr;
    bool identity = args[0]->is_constant() && args[0]->obj.get() == Py_None;
    std::vector<ValuePtr> out;
    for (const ValuePtr& x : *xs) {
      ValuePtr test = identity ? x : call_value(args[0], {x}, {});
      if (!test) return nullptr;
      auto truth = truthiness(test);
      if (!truth) return nullptr;
      if (*truth) out.push_back(x);
    }
    consume(args[1], xs->size());
    return Value::iterator(std::move(out), &PyFilter_Type);
  }

  if (f == builtin_named("next") && (args.size() == 1 || args.size() == 2) && kwargs.empty()) {
    const ValuePtr& it = args[0];
    if (it->kind != ValueKind::iterator) return unsupported("next() of a " + it->type_name() + " (not an iterator)"), nullptr;
    if (it->position < it->items.size()) {
      if (!may_stop_after(it, 1, "next()")) return nullptr;
      journal(it);
      return it->items[it->position++];
    }
    if (args.size() == 2) return args[1];
    return unsupported("next() of an exhausted iterator raises StopIteration"), nullptr;
  }

  bool is_min = f == builtin_named("min"), is_max = f == builtin_named("max");
  if ((is_min || is_max) && !args.empty() && only_kwargs(kwargs, {"key", "default"})) {
    const ValuePtr* key = find_kwarg(kwargs, "key");
    bool one_iterable = args.size() == 1;
    // max(tensor) and max over constants are left to call_builtin.
    if (one_iterable && args[0]->is_tensor()) return handled = false, nullptr;
    if (!key && std::all_of(args.begin(), args.end(), [](const ValuePtr& a) { return a->is_python_constant(); }))
      return handled = false, nullptr;
    std::vector<ValuePtr> xs;
    if (one_iterable) {
      auto got = items(args[0], is_min ? "min" : "max");
      if (!got) return nullptr;
      xs = std::move(*got);
      consume(args[0], xs.size());
    } else {
      xs = args;
    }
    if (xs.empty()) {
      if (const ValuePtr* d = find_kwarg(kwargs, "default")) return *d;
      return unsupported(std::string(is_min ? "min" : "max") + "() of an empty sequence raises ValueError"), nullptr;
    }
    size_t best = 0;
    ValuePtr best_key;
    for (size_t i = 0; i < xs.size(); ++i) {
      ValuePtr k = key && !((*key)->is_constant() && (*key)->obj.get() == Py_None) ? call_value(*key, {xs[i]}, {}) : xs[i];
      if (!k) return nullptr;
      if (!k->is_constant()) return unsupported(std::string(is_min ? "min" : "max") + "() comparing values of type " + k->type_name() + " (only constants are compared at trace time)"), nullptr;
      if (!best_key) {
        best_key = k;
        continue;
      }
      int better = PyObject_RichCompareBool(k->obj.get(), best_key->obj.get(), is_min ? Py_LT : Py_GT);
      if (better < 0) {
        clear_expected_error({PyExc_TypeError});  // unsupported() names anything else (a user __lt__ raising)
        return unsupported(std::string(is_min ? "min" : "max") + "() of values that do not compare"), nullptr;
      }
      if (better) best = i, best_key = k;
    }
    return xs[best];
  }

  if (f == builtin_named("sorted") && args.size() == 1 && find_kwarg(kwargs, "key") && only_kwargs(kwargs, {"key", "reverse"})) {
    auto xs = items(args[0], "sorted");
    if (!xs) return nullptr;
    consume(args[0], xs->size());
    bool reverse = false;
    if (const ValuePtr* r = find_kwarg(kwargs, "reverse")) {
      auto truth = truthiness(*r);
      if (!truth) return nullptr;
      reverse = *truth;
    }
    // Sort (key, index) pairs with the real Python comparison, then pick.
    PyRef pairs = PyRef::steal(PyList_New(0));
    for (size_t i = 0; i < xs->size(); ++i) {
      ValuePtr k = call_value(*find_kwarg(kwargs, "key"), {(*xs)[i]}, {});
      if (!k || !k->is_python_constant()) {
        if (k) unsupported("sorted() with a key giving a " + k->type_name());
        return nullptr;
      }
      PyRef kobj = k->as_python();
      PyRef pair = PyRef::steal(kobj ? Py_BuildValue("(On)", kobj.get(), static_cast<Py_ssize_t>(i)) : nullptr);
      if (pairs && (!pair || PyList_Append(pairs.get(), pair.get()) < 0)) pairs = PyRef();  // named below
    }
    // sorted(pairs, key=itemgetter(0), reverse=...): Python's own stable sort.
    PyObject* sorter = builtin_named("sorted");
    PyRef getkey = PyRef::steal(PyObject_CallFunction(cached_module_attr("operator", "itemgetter"), "i", 0));
    PyRef call_kw = PyRef::steal(
        getkey ? Py_BuildValue("{s:O,s:O}", "key", getkey.get(), "reverse", reverse ? Py_True : Py_False) : nullptr);
    PyRef call_args = PyRef::steal(pairs ? PyTuple_Pack(1, pairs.get()) : nullptr);
    PyRef sorted_pairs =
        PyRef::steal(call_kw && call_args ? PyObject_Call(sorter, call_args.get(), call_kw.get()) : nullptr);
    if (!sorted_pairs) {
      clear_expected_error({PyExc_TypeError});  // unsupported() names anything else (a user __lt__ raising)
      return unsupported("sorted() with keys that do not compare"), nullptr;
    }
    std::vector<ValuePtr> out;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(sorted_pairs.get()); ++i)
      out.push_back((*xs)[PyLong_AsSize_t(PyTuple_GET_ITEM(PyList_GET_ITEM(sorted_pairs.get(), i), 1))]);
    return Value::sequence(ValueKind::list, std::move(out));
  }

  if (f == cached_module_attr("functools", "reduce") && (args.size() == 2 || args.size() == 3) && kwargs.empty()) {
    auto xs = items(args[1], "functools.reduce");
    if (!xs) return nullptr;
    consume(args[1], xs->size());
    size_t start = 0;
    ValuePtr acc;
    if (args.size() == 3) {
      acc = args[2];
    } else {
      if (xs->empty()) return unsupported("functools.reduce() of an empty sequence with no initial value raises TypeError"), nullptr;
      acc = (*xs)[0];
      start = 1;
    }
    for (size_t i = start; i < xs->size(); ++i) {
      acc = call_value(args[0], {acc, (*xs)[i]}, {});
      if (!acc) return nullptr;
    }
    return acc;
  }

  PyObject* chain = cached_module_attr("itertools", "chain");
  bool from_iterable = is_bound_classmethod(f, chain, "from_iterable");
  if ((f == chain || from_iterable) && kwargs.empty() && (!from_iterable || args.size() == 1)) {
    std::vector<ValuePtr> parts = args;
    if (from_iterable) {
      auto outer = items(args[0], "itertools.chain.from_iterable");
      if (!outer) return nullptr;
      consume(args[0], outer->size());
      parts = std::move(*outer);
    }
    std::vector<ValuePtr> out;
    for (const ValuePtr& part : parts) {
      auto xs = items(part, "itertools.chain");
      if (!xs) return nullptr;
      consume(part, xs->size());
      out.insert(out.end(), xs->begin(), xs->end());
    }
    return Value::iterator(std::move(out), itertools_type("chain"));
  }

  if (f == cached_module_attr("itertools", "islice") && args.size() >= 2 && args.size() <= 4 && kwargs.empty()) {
    auto xs = items(args[0], "itertools.islice");
    if (!xs) return nullptr;
    auto bound = [&](size_t i, long dflt) -> std::optional<long> {
      if (i >= args.size() || (args[i]->is_constant() && args[i]->obj.get() == Py_None)) return dflt;
      return constant_int(args[i]);
    };
    long n = static_cast<long>(xs->size());
    std::optional<long> start = args.size() == 2 ? 0 : bound(1, 0);
    std::optional<long> stop = args.size() == 2 ? bound(1, n) : bound(2, n);
    std::optional<long> step = bound(3, 1);
    if (!start || !stop || !step || *start < 0 || *stop < 0 || *step < 1)
      return unsupported("itertools.islice() with bounds that are not constant non-negative ints"), nullptr;
    std::vector<ValuePtr> out;
    long last = -1;
    for (long i = *start; i < std::min(*stop, n); i += *step) out.push_back((*xs)[static_cast<size_t>(last = i)]);
    // islice reads the items it skips over, up to its last one.
    size_t taken = static_cast<size_t>(std::min(n, std::max(last + 1, std::min(*start, n))));
    if (!may_stop_after(args[0], taken, "itertools.islice()")) return nullptr;
    consume(args[0], taken);
    return Value::iterator(std::move(out), itertools_type("islice"));
  }

  if (f == cached_module_attr("itertools", "product") && only_kwargs(kwargs, {"repeat"})) {
    long repeat = 1;
    if (const ValuePtr* r = find_kwarg(kwargs, "repeat")) {
      auto v = constant_int(*r);
      if (!v || *v < 0) return unsupported("itertools.product() with a repeat that is not a constant int"), nullptr;
      repeat = *v;
    }
    std::vector<std::vector<ValuePtr>> pools;
    for (const ValuePtr& a : args) {
      auto xs = items(a, "itertools.product");
      if (!xs) return nullptr;
      consume(a, xs->size());
      pools.push_back(std::move(*xs));
    }
    std::vector<std::vector<ValuePtr>> all;
    for (long r = 0; r < repeat; ++r) all.insert(all.end(), pools.begin(), pools.end());
    std::vector<std::vector<ValuePtr>> rows = {{}};
    for (const auto& pool : all) {
      std::vector<std::vector<ValuePtr>> next;
      for (const auto& row : rows)
        for (const auto& x : pool) {
          next.push_back(row);
          next.back().push_back(x);
        }
      rows = std::move(next);
      if (rows.size() > 100000) return unsupported("itertools.product() of more than 100000 items"), nullptr;
    }
    std::vector<ValuePtr> out;
    for (auto& row : rows) out.push_back(Value::sequence(ValueKind::tuple, std::move(row)));
    return Value::iterator(std::move(out), itertools_type("product"));
  }

  handled = false;
  return nullptr;
}

}  // namespace tj::tracer
