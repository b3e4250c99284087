// Calls that consume or build iterables, evaluated by the tracer itself:
// all/any, map/filter, next, min/max/sorted with a key, functools.reduce,
// itertools.chain/chain.from_iterable/islice/product/repeat.
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
//
// One table, kIterableHandlers, maps each function (by identity: builtins,
// functools, itertools) to a small handler; a handler declines a call
// whose arguments are not its case (nullopt), and call_iterable_function
// then reports it unhandled. New iterable functions go into
// kIterableHandlers (classmethods bound anew at each read, such as
// itertools.chain.from_iterable, into kBoundClassmethodHandlers).
#include <algorithm>
#include <cassert>
#include <cstring>
#include <unordered_map>

#include "support/py_lookup.h"
#include "tracer/py_str.h"
#include "tracer/translate_call.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

using Kwargs = std::vector<std::pair<std::string, ValuePtr>>;

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

bool is_none(const ValuePtr& v) { return v->is_constant() && v->obj.get() == Py_None; }

// One call, as its handler sees it: the handlers work through a
// TraceContext (trace_context.h), not the translator.
struct IterableCall {
  TraceContext t;
  std::vector<ValuePtr>& args;
  Kwargs& kwargs;

  std::optional<std::vector<ValuePtr>> items(const ValuePtr& v, const char* who) { return t.iterable_items(v, who); }
  ValuePtr refuse(const std::string& reason) { return t.unsupported(reason), nullptr; }
};

// A handler's answer: a value (null: failed, the reason set), or nullopt:
// not its case (the call is then not handled here).
using Answer = std::optional<ValuePtr>;
using IterableHandler = Answer (*)(IterableCall&);
constexpr std::nullopt_t kDecline = std::nullopt;

// all()/any(): Python stops at the first item that decides the answer.
Answer all_or_any(IterableCall& c, bool want_all) {
  if (c.args.size() != 1 || !c.kwargs.empty() || c.args[0]->is_python_constant()) return kDecline;
  auto xs = c.items(c.args[0], want_all ? "all" : "any");
  if (!xs) return nullptr;
  for (size_t i = 0; i < xs->size(); ++i) {
    auto truth = c.t.truthiness((*xs)[i]);
    if (!truth) return nullptr;
    if (*truth != want_all) {
      if (!c.t.may_stop_after(c.args[0], i + 1, want_all ? "all()" : "any()")) return nullptr;
      c.t.consume(c.args[0], i + 1);
      return Value::constant(want_all ? Py_False : Py_True);
    }
  }
  c.t.consume(c.args[0], xs->size());
  return Value::constant(want_all ? Py_True : Py_False);
}
Answer call_all(IterableCall& c) { return all_or_any(c, /*want_all=*/true); }
Answer call_any(IterableCall& c) { return all_or_any(c, /*want_all=*/false); }

Answer call_map(IterableCall& c) {
  if (c.args.size() < 2 || !c.kwargs.empty()) return kDecline;
  std::vector<std::vector<ValuePtr>> lists;
  size_t n = SIZE_MAX;
  for (size_t i = 1; i < c.args.size(); ++i) {
    auto xs = c.items(c.args[i], "map");
    if (!xs) return nullptr;
    n = std::min(n, xs->size());
    lists.push_back(std::move(*xs));
  }
  std::vector<ValuePtr> out;
  for (size_t k = 0; k < n; ++k) {
    std::vector<ValuePtr> call_args;
    for (const auto& l : lists) call_args.push_back(l[k]);
    ValuePtr r = c.t.call_value(c.args[0], std::move(call_args), {});
    if (!r) return nullptr;
    out.push_back(std::move(r));
  }
  for (size_t i = 1; i < c.args.size(); ++i) c.t.consume(c.args[i], n);
  return Value::iterator(std::move(out), &PyMap_Type);
}

Answer call_filter(IterableCall& c) {
  if (c.args.size() != 2 || !c.kwargs.empty()) return kDecline;
  auto xs = c.items(c.args[1], "filter");
  if (!xs) return nullptr;
  bool identity = is_none(c.args[0]);
  std::vector<ValuePtr> out;
  for (const ValuePtr& x : *xs) {
    ValuePtr test = identity ? x : c.t.call_value(c.args[0], {x}, {});
    if (!test) return nullptr;
    auto truth = c.t.truthiness(test);
    if (!truth) return nullptr;
    if (*truth) out.push_back(x);
  }
  c.t.consume(c.args[1], xs->size());
  return Value::iterator(std::move(out), &PyFilter_Type);
}

Answer call_next(IterableCall& c) {
  if ((c.args.size() != 1 && c.args.size() != 2) || !c.kwargs.empty()) return kDecline;
  const ValuePtr& it = c.args[0];
  if (it->kind != ValueKind::iterator) return c.refuse("next() of a " + it->type_name() + " (not an iterator)");
  if (it->position < it->items.size()) {
    if (!c.t.may_stop_after(it, 1, "next()")) return nullptr;
    c.t.journal(it);
    return it->items[it->position++];
  }
  if (c.args.size() == 2) return c.args[1];
  return c.refuse("next() of an exhausted iterator raises StopIteration");
}

// min()/max() with a key, or over values that are not all constants
// (max(tensor) and max over constants are left to call_builtin).
Answer min_or_max(IterableCall& c, bool is_min) {
  if (c.args.empty() || !only_kwargs(c.kwargs, {"key", "default"})) return kDecline;
  const char* what = is_min ? "min" : "max";
  const ValuePtr* key = find_kwarg(c.kwargs, "key");
  bool one_iterable = c.args.size() == 1;
  if (one_iterable && c.args[0]->is_tensor()) return kDecline;
  if (!key && std::all_of(c.args.begin(), c.args.end(), [](const ValuePtr& a) { return a->is_python_constant(); }))
    return kDecline;
  std::vector<ValuePtr> xs;
  if (one_iterable) {
    auto got = c.items(c.args[0], what);
    if (!got) return nullptr;
    xs = std::move(*got);
    c.t.consume(c.args[0], xs.size());
  } else {
    xs = c.args;
  }
  if (xs.empty()) {
    if (const ValuePtr* d = find_kwarg(c.kwargs, "default")) return *d;
    return c.refuse(std::string(what) + "() of an empty sequence raises ValueError");
  }
  size_t best = 0;
  ValuePtr best_key;
  for (size_t i = 0; i < xs.size(); ++i) {
    ValuePtr k = key && !is_none(*key) ? c.t.call_value(*key, {xs[i]}, {}) : xs[i];
    if (!k) return nullptr;
    if (!k->is_constant())
      return c.refuse(std::string(what) + "() comparing values of type " + k->type_name() +
                      " (only constants are compared at trace time)");
    if (!best_key) {
      best_key = k;
      continue;
    }
    int better = PyObject_RichCompareBool(k->obj.get(), best_key->obj.get(), is_min ? Py_LT : Py_GT);
    if (better < 0) {
      clear_expected_error({PyExc_TypeError});  // unsupported() names anything else (a user __lt__ raising)
      return c.refuse(std::string(what) + "() of values that do not compare");
    }
    if (better) best = i, best_key = k;
  }
  return xs[best];
}
Answer call_min(IterableCall& c) { return min_or_max(c, /*is_min=*/true); }
Answer call_max(IterableCall& c) { return min_or_max(c, /*is_min=*/false); }

// The permutation Python's stable sort gives keys `keys` (constants), or
// nullopt with unsupported set: sorted((key, index) pairs, key=itemgetter(0)).
std::optional<std::vector<size_t>> sorted_order(IterableCall& c, const std::vector<ValuePtr>& keys, bool reverse) {
  PyRef pairs = PyRef::steal(PyList_New(0));
  for (size_t i = 0; i < keys.size(); ++i) {
    PyRef kobj = keys[i]->as_python();
    PyRef pair = PyRef::steal(kobj ? Py_BuildValue("(On)", kobj.get(), static_cast<Py_ssize_t>(i)) : nullptr);
    if (pairs && (!pair || PyList_Append(pairs.get(), pair.get()) < 0)) pairs = PyRef();  // named below
  }
  PyObject* sorter = PyDict_GetItemString(PyModule_GetDict(builtins_module()), "sorted");
  PyRef getkey = PyRef::steal(PyObject_CallFunction(cached_module_attr("operator", "itemgetter"), "i", 0));
  PyRef call_kw = PyRef::steal(
      getkey ? Py_BuildValue("{s:O,s:O}", "key", getkey.get(), "reverse", reverse ? Py_True : Py_False) : nullptr);
  PyRef call_args = PyRef::steal(pairs ? PyTuple_Pack(1, pairs.get()) : nullptr);
  PyRef sorted_pairs = PyRef::steal(call_kw && call_args ? PyObject_Call(sorter, call_args.get(), call_kw.get()) : nullptr);
  if (!sorted_pairs) {
    clear_expected_error({PyExc_TypeError});  // unsupported() names anything else (a user __lt__ raising)
    c.t.unsupported("sorted() with keys that do not compare");
    return std::nullopt;
  }
  std::vector<size_t> order;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(sorted_pairs.get()); ++i)
    order.push_back(PyLong_AsSize_t(PyTuple_GET_ITEM(PyList_GET_ITEM(sorted_pairs.get(), i), 1)));
  return order;
}

// sorted(xs, key=..., reverse=...): the keys computed by the trace, then
// sorted with the real Python comparison.
Answer call_sorted(IterableCall& c) {
  const ValuePtr* key = find_kwarg(c.kwargs, "key");
  if (c.args.size() != 1 || !key || !only_kwargs(c.kwargs, {"key", "reverse"})) return kDecline;
  auto xs = c.items(c.args[0], "sorted");
  if (!xs) return nullptr;
  c.t.consume(c.args[0], xs->size());
  bool reverse = false;
  if (const ValuePtr* r = find_kwarg(c.kwargs, "reverse")) {
    auto truth = c.t.truthiness(*r);
    if (!truth) return nullptr;
    reverse = *truth;
  }
  std::vector<ValuePtr> keys;
  for (const ValuePtr& x : *xs) {
    ValuePtr k = c.t.call_value(*key, {x}, {});
    if (!k || !k->is_python_constant()) {
      if (k) c.t.unsupported("sorted() with a key giving a " + k->type_name());
      return nullptr;
    }
    keys.push_back(std::move(k));
  }
  auto order = sorted_order(c, keys, reverse);
  if (!order) return nullptr;
  std::vector<ValuePtr> out;
  for (size_t i : *order) out.push_back((*xs)[i]);
  return Value::sequence(ValueKind::list, std::move(out));
}

Answer call_reduce(IterableCall& c) {
  if ((c.args.size() != 2 && c.args.size() != 3) || !c.kwargs.empty()) return kDecline;
  auto xs = c.items(c.args[1], "functools.reduce");
  if (!xs) return nullptr;
  c.t.consume(c.args[1], xs->size());
  size_t start = 0;
  ValuePtr acc;
  if (c.args.size() == 3) {
    acc = c.args[2];
  } else {
    if (xs->empty()) return c.refuse("functools.reduce() of an empty sequence with no initial value raises TypeError");
    acc = (*xs)[0];
    start = 1;
  }
  for (size_t i = start; i < xs->size(); ++i) {
    acc = c.t.call_value(c.args[0], {acc, (*xs)[i]}, {});
    if (!acc) return nullptr;
  }
  return acc;
}

// itertools.chain(*parts): every part read to its end.
ValuePtr chain_of(IterableCall& c, const std::vector<ValuePtr>& parts) {
  std::vector<ValuePtr> out;
  for (const ValuePtr& part : parts) {
    auto xs = c.items(part, "itertools.chain");
    if (!xs) return nullptr;
    c.t.consume(part, xs->size());
    out.insert(out.end(), xs->begin(), xs->end());
  }
  return Value::iterator(std::move(out), itertools_type("chain"));
}

Answer call_chain(IterableCall& c) {
  if (!c.kwargs.empty()) return kDecline;
  return chain_of(c, c.args);
}

Answer call_chain_from_iterable(IterableCall& c) {
  if (!c.kwargs.empty() || c.args.size() != 1) return kDecline;
  auto outer = c.items(c.args[0], "itertools.chain.from_iterable");
  if (!outer) return nullptr;
  c.t.consume(c.args[0], outer->size());
  return chain_of(c, *outer);
}

// itertools.repeat(obj, times) with a constant count (torch.nn.modules.utils'
// `_ntuple`: `tuple(repeat(x, n))` for every conv, fold and pool size);
// without a count it never ends, and is left to CPython.
Answer call_repeat(IterableCall& c) {
  if (c.args.size() != 2 || !c.kwargs.empty()) return kDecline;
  std::optional<long> times = constant_int(c.args[1]);
  if (!times || *times > 4096) return kDecline;
  std::vector<ValuePtr> out(static_cast<size_t>(std::max(*times, 0L)), c.args[0]);
  return Value::iterator(std::move(out), itertools_type("repeat"));
}

Answer call_islice(IterableCall& c) {
  const std::vector<ValuePtr>& args = c.args;
  if (args.size() < 2 || args.size() > 4 || !c.kwargs.empty()) return kDecline;
  auto xs = c.items(args[0], "itertools.islice");
  if (!xs) return nullptr;
  auto bound = [&](size_t i, long dflt) -> std::optional<long> {
    if (i >= args.size() || is_none(args[i])) return dflt;
    return constant_int(args[i]);
  };
  long n = static_cast<long>(xs->size());
  std::optional<long> start = args.size() == 2 ? 0 : bound(1, 0);
  std::optional<long> stop = args.size() == 2 ? bound(1, n) : bound(2, n);
  std::optional<long> step = bound(3, 1);
  if (!start || !stop || !step || *start < 0 || *stop < 0 || *step < 1)
    return c.refuse("itertools.islice() with bounds that are not constant non-negative ints");
  std::vector<ValuePtr> out;
  long last = -1;
  for (long i = *start; i < std::min(*stop, n); i += *step) out.push_back((*xs)[static_cast<size_t>(last = i)]);
  // islice reads the items it skips over, up to its last one.
  size_t taken = static_cast<size_t>(std::min(n, std::max(last + 1, std::min(*start, n))));
  if (!c.t.may_stop_after(args[0], taken, "itertools.islice()")) return nullptr;
  c.t.consume(args[0], taken);
  return Value::iterator(std::move(out), itertools_type("islice"));
}

Answer call_product(IterableCall& c) {
  if (!only_kwargs(c.kwargs, {"repeat"})) return kDecline;
  long repeat = 1;
  if (const ValuePtr* r = find_kwarg(c.kwargs, "repeat")) {
    auto v = constant_int(*r);
    if (!v || *v < 0) return c.refuse("itertools.product() with a repeat that is not a constant int");
    repeat = *v;
  }
  std::vector<std::vector<ValuePtr>> pools;
  for (const ValuePtr& a : c.args) {
    auto xs = c.items(a, "itertools.product");
    if (!xs) return nullptr;
    c.t.consume(a, xs->size());
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
    if (rows.size() > 100000) return c.refuse("itertools.product() of more than 100000 items");
  }
  std::vector<ValuePtr> out;
  for (auto& row : rows) out.push_back(Value::sequence(ValueKind::tuple, std::move(row)));
  return Value::iterator(std::move(out), itertools_type("product"));
}

// The functions with a handler: `module.name`, looked up once and then told by identity.
struct IterableEntry {
  const char* module;
  const char* name;
  IterableHandler handler;
};
const IterableEntry kIterableHandlers[] = {
    {"builtins", "all", call_all},
    {"builtins", "any", call_any},
    {"builtins", "map", call_map},
    {"builtins", "filter", call_filter},
    {"builtins", "next", call_next},
    {"builtins", "min", call_min},
    {"builtins", "max", call_max},
    {"builtins", "sorted", call_sorted},
    {"functools", "reduce", call_reduce},
    {"itertools", "chain", call_chain},
    {"itertools", "islice", call_islice},
    {"itertools", "repeat", call_repeat},
    {"itertools", "product", call_product},
};

// Classmethods of C types, bound anew at each attribute read: told by
// their type (`module.type`) and method name.
struct BoundClassmethodEntry {
  const char* module;
  const char* type;
  const char* method;
  IterableHandler handler;
};
const BoundClassmethodEntry kBoundClassmethodHandlers[] = {
    {"itertools", "chain", "from_iterable", call_chain_from_iterable},
};

IterableHandler find_iterable_handler(PyObject* f) {
  static const std::unordered_map<PyObject*, IterableHandler> table = [] {
    std::unordered_map<PyObject*, IterableHandler> out;
    for (const IterableEntry& e : kIterableHandlers)
      if (PyObject* key = cached_module_attr(e.module, e.name)) out.emplace(key, e.handler);
    return out;
  }();
  if (auto it = table.find(f); it != table.end()) return it->second;
  if (!PyCFunction_Check(f)) return nullptr;
  for (const BoundClassmethodEntry& e : kBoundClassmethodHandlers)
    if (is_bound_classmethod(f, cached_module_attr(e.module, e.type), e.method)) return e.handler;
  return nullptr;
}

}  // namespace

void InstructionTranslator::consume(const ValuePtr& v, size_t n) {
  if (v->kind != ValueKind::iterator || n == 0) return;
  journal(v);
  v->position = std::min(v->items.size(), v->position + n);
}

ValuePtr call_iterable_function(TraceContext cx, PyObject* f, std::vector<ValuePtr>& args, Kwargs& kwargs,
                                bool& handled) {
  handled = false;
  IterableHandler handler = find_iterable_handler(f);
  if (!handler) return nullptr;
  IterableCall call{cx, args, kwargs};
  Answer answer = handler(call);
  handled = answer.has_value();
  return handled ? *answer : nullptr;
}

}  // namespace tj::tracer
