// Guard evaluation on a frame view (runtime/guard_check.h): each guard kind
// holds on the values it was made from and fails, naming itself, on others.
#include <gtest/gtest.h>

#include "runtime/guard_check.h"
#include "support/tensor_bridge.h"

namespace tj::runtime {
namespace {

using tracer::Guard;
using tracer::GuardKind;
using tracer::GuardSet;
using tracer::ModuleTable;
using tracer::Source;

// New reference to the value of a Python expression (torch imported).
PyObject* eval(const char* expr) {
  static PyObject* ns = [] {
    PyObject* d = PyDict_New();
    PyDict_SetItemString(d, "__builtins__", PyEval_GetBuiltins());
    PyObject* r = PyRun_String("import torch", Py_file_input, d, d);
    Py_XDECREF(r);
    return d;
  }();
  PyObject* r = PyRun_String(expr, Py_eval_input, ns, ns);
  EXPECT_NE(r, nullptr) << expr;
  return r;
}

struct Frame {
  std::vector<PyObject*> locals;
  PyObject* globals = PyDict_New();
  tj_FrameView view() {
    return tj_FrameView{nullptr, nullptr, globals, PyEval_GetBuiltins(), locals.data(), nullptr};
  }
  ~Frame() {
    for (PyObject* o : locals) Py_XDECREF(o);
    Py_DECREF(globals);
  }
};

bool check(const GuardSet& set, Frame& f, std::string* failed = nullptr) {
  return compile_guards(set)->check(f.view(), failed);
}

Guard tensor_guard(PyObject* t, int slot) {
  Guard g{GuardKind::tensor_match, Source::local(slot, "x"), PyRef::borrow(reinterpret_cast<PyObject*>(Py_TYPE(t)))};
  g.tensor = graph::TensorMeta::of(unpack_tensor(t));
  g.dispatch_keys = dispatch_key_bits(unpack_tensor(t));
  return g;
}

TEST(Guards, TensorMatchComparesDtypeSizesStridesAndGrad) {
  Frame f;
  f.locals = {eval("torch.ones(2, 3)")};
  GuardSet set;
  set.add(tensor_guard(f.locals[0], 0));
  EXPECT_TRUE(check(set, f));
  for (const char* other : {"torch.ones(3, 2)", "torch.ones(2, 3, dtype=torch.float64)", "torch.ones(3, 2).t()",
                            "torch.ones(2, 3, requires_grad=True)", "[1, 2]"}) {
    Py_DECREF(f.locals[0]);
    f.locals[0] = eval(other);
    std::string failed;
    EXPECT_FALSE(check(set, f, &failed)) << other;
    EXPECT_NE(failed.find("TENSOR_MATCH L['x']"), std::string::npos) << failed;
  }
}

// Dynamic dims (issue 15): any size >= 2 there, the strides of a dense
// tensor in the traced dim order; size 0/1, another order, another static
// size fail; a failure only in sizes names the dims that changed.
TEST(Guards, TensorMatchWithDynamicDimsAcceptsOtherSizesOfTheSameLayout) {
  Frame f;
  f.locals = {eval("torch.ones(4, 3, 5).permute(0, 2, 1)")};  // dims ordered 0, 2, 1 by stride
  GuardSet set;
  Guard g = tensor_guard(f.locals[0], 0);
  g.dynamic_dims = {true, true, false};
  set.add(g);
  EXPECT_NE(set.to_string().find("Float[>=2, >=2, 3] dense in the traced dim order"), std::string::npos) << set.to_string();
  auto with = [&](const char* expr) {
    Py_DECREF(f.locals[0]);
    f.locals[0] = eval(expr);
  };
  for (const char* same_kind : {"torch.ones(7, 3, 2).permute(0, 2, 1)", "torch.ones(2, 3, 9).permute(0, 2, 1)"}) {
    with(same_kind);
    EXPECT_TRUE(check(set, f)) << same_kind;
  }
  for (const char* other : {"torch.ones(1, 3, 5).permute(0, 2, 1)", "torch.ones(4, 3, 0).permute(0, 2, 1)",
                            "torch.ones(4, 4, 5).permute(0, 2, 1)", "torch.ones(4, 5, 3)",
                            "torch.ones(4, 3, 10).permute(0, 2, 1)[:, ::2]"}) {
    with(other);
    std::string failed;
    EXPECT_FALSE(check(set, f, &failed)) << other;
    EXPECT_NE(failed.find("TENSOR_MATCH L['x']"), std::string::npos) << failed;
  }
  // a static guard failing on a size alone: that dim is what changed
  GuardSet exact;
  with("torch.ones(4, 3)");
  exact.add(tensor_guard(f.locals[0], 0));
  with("torch.ones(6, 3)");
  std::unordered_map<std::string, std::vector<bool>> dims;
  EXPECT_TRUE(compile_guards(exact)->fails_only_on_sizes(f.view(), &dims));
  EXPECT_EQ(dims["L['x']"], (std::vector<bool>{true, false}));
  with("torch.ones(6, 3, dtype=torch.float64)");  // not only sizes
  dims.clear();
  EXPECT_FALSE(compile_guards(exact)->fails_only_on_sizes(f.view(), &dims));
}

// Automatic dynamic ints (issue 11): a CONST_EQ failing only because an
// int changed value (to another int in range) names the int's source;
// the DYNAMIC_INT guard then accepts any int in [-2**31, 2**31), not a
// bool, a float or a larger int.
TEST(Guards, IntsThatChangeValueAndTheDynamicIntGuard) {
  Frame f;
  f.locals = {eval("3"), eval("torch.ones(2)")};
  GuardSet constants;
  constants.add(Guard{GuardKind::const_eq, Source::local(0, "n"), PyRef::steal(eval("3"))});
  constants.add(tensor_guard(f.locals[1], 1));
  auto with = [&](const char* expr) {
    Py_DECREF(f.locals[0]);
    f.locals[0] = eval(expr);
  };
  with("4");
  std::unordered_map<std::string, std::vector<bool>> dims;
  std::vector<std::string> ints;
  EXPECT_TRUE(compile_guards(constants)->fails_only_on_sizes(f.view(), &dims, &ints));
  EXPECT_EQ(ints, (std::vector<std::string>{"L['n']"}));
  EXPECT_TRUE(dims.empty());
  ints.clear();
  EXPECT_FALSE(compile_guards(constants)->fails_only_on_sizes(f.view(), &dims)) << "ints are not asked for";
  for (const char* other : {"True", "4.0", "2**40", "'4'"}) {
    with(other);
    EXPECT_FALSE(compile_guards(constants)->fails_only_on_sizes(f.view(), &dims, &ints)) << other;
  }
  GuardSet dynamic;
  dynamic.add(Guard{GuardKind::dynamic_int, Source::local(0, "n")});
  EXPECT_EQ(dynamic.to_string(), "DYNAMIC_INT L['n'] int in [-2**31, 2**31)\n");
  for (const char* accepted : {"0", "-5", "2**31 - 1", "-2**31"}) {
    with(accepted);
    EXPECT_TRUE(check(dynamic, f)) << accepted;
  }
  for (const char* rejected : {"2**31", "-2**31 - 1", "True", "1.0", "None"}) {
    with(rejected);
    std::string failed;
    EXPECT_FALSE(check(dynamic, f, &failed)) << rejected;
    EXPECT_NE(failed.find("DYNAMIC_INT L['n']"), std::string::npos) << failed;
  }
}

// Number facts (issue 42 item 3): NUMBER_FACT re-evaluates the steps on
// the input's value and holds while the comparison's outcome is the traced
// one (an LR scheduler's `(last_epoch + 1) % 3 != 0`), whatever the value;
// a step that raises now (a division by zero) fails it. changed_numbers
// names ints and floats that moved, whatever else failed.
TEST(Guards, NumberFactsHoldOnTheOutcomeAndChangedNumbers) {
  Frame f;
  f.locals = {eval("4"), eval("0.5")};
  auto with = [&](size_t i, const char* expr) {
    Py_DECREF(f.locals[i]);
    f.locals[i] = eval(expr);
  };
  auto fact = std::make_shared<tracer::NumberFact>();
  fact->steps = {{tracer::NumberOp::add, PyRef::steal(eval("1")), false},
                 {tracer::NumberOp::remainder, PyRef::steal(eval("3")), false}};
  fact->compare_op = Py_NE;
  fact->other = PyRef::steal(eval("0"));
  fact->outcome = true;
  fact->text = "((L['n'] + 1) % 3) != 0";
  Guard g{GuardKind::number_fact, Source::local(0, "n")};
  g.number_fact = fact;
  GuardSet set;
  set.add(g);
  EXPECT_EQ(set.to_string(), "NUMBER_FACT (((L['n'] + 1) % 3) != 0) is True\n");
  for (const char* holds : {"0", "4", "6", "-2"}) {
    with(0, holds);
    EXPECT_TRUE(check(set, f)) << holds;
  }
  for (const char* fails : {"2", "5", "-1", "'x'", "None"}) {
    with(0, fails);
    EXPECT_FALSE(check(set, f)) << fails;
    EXPECT_FALSE(PyErr_Occurred()) << fails;
  }
  auto inverse = std::make_shared<tracer::NumberFact>(*fact);
  inverse->steps = {{tracer::NumberOp::true_divide, PyRef::steal(eval("1.0")), true}};
  inverse->compare_op = Py_GT;
  inverse->other = PyRef::steal(eval("1.0"));
  Guard h{GuardKind::number_fact, Source::local(1, "x")};
  h.number_fact = inverse;
  GuardSet divides;
  divides.add(h);
  EXPECT_TRUE(check(divides, f)) << "1.0 / 0.5 > 1.0";
  with(1, "0.0");
  EXPECT_FALSE(check(divides, f)) << "1.0 / 0.0 raises: the fact does not hold";
  EXPECT_FALSE(PyErr_Occurred());

  GuardSet constants;
  constants.add(Guard{GuardKind::const_eq, Source::local(0, "n"), PyRef::steal(eval("4"))});
  constants.add(Guard{GuardKind::const_eq, Source::local(1, "x"), PyRef::steal(eval("0.5"))});
  constants.add(Guard{GuardKind::type_match, Source::local(0, "n"),
                      PyRef::borrow(reinterpret_cast<PyObject*>(&PyFloat_Type))});  // fails whatever n is
  with(0, "7");
  with(1, "0.25");
  std::vector<std::string> moved;
  compile_guards(constants)->changed_numbers(f.view(), moved);
  EXPECT_EQ(moved, (std::vector<std::string>{"L['n']", "L['x']"}));
  with(1, "'text'");
  moved.clear();
  compile_guards(constants)->changed_numbers(f.view(), moved);
  EXPECT_EQ(moved, (std::vector<std::string>{"L['n']"})) << "a float that became a str is not a number that moved";
}

TEST(Guards, ConstantsLengthsKeysAndIdentity) {
  Frame f;
  f.locals = {eval("3"), eval("[1, 2]"), eval("{'a': 1, 'b': 2}"), eval("torch.relu")};
  GuardSet set;
  set.add(Guard{GuardKind::const_eq, Source::local(0, "n"), PyRef::steal(eval("3"))});
  Guard len{GuardKind::length, Source::local(1, "xs"), PyRef::borrow(reinterpret_cast<PyObject*>(&PyList_Type))};
  len.length = 2;
  set.add(len);
  set.add(Guard{GuardKind::dict_keys, Source::local(2, "d"), PyRef::steal(eval("('a', 'b')"))});
  set.add(Guard{GuardKind::id_match, Source::local(3, "f"), PyRef::steal(eval("torch.relu"))});
  EXPECT_TRUE(check(set, f));

  auto expect_failure = [&](int slot, const char* value, const char* guard) {
    PyObject* saved = f.locals[static_cast<size_t>(slot)];
    f.locals[static_cast<size_t>(slot)] = eval(value);
    std::string failed;
    EXPECT_FALSE(check(set, f, &failed)) << value;
    EXPECT_EQ(failed.rfind(guard, 0), 0u) << failed;
    Py_DECREF(f.locals[static_cast<size_t>(slot)]);
    f.locals[static_cast<size_t>(slot)] = saved;
  };
  expect_failure(0, "4", "CONST_EQ");
  expect_failure(0, "3.0", "CONST_EQ");  // equal but another type
  expect_failure(1, "[1, 2, 3]", "LEN");
  expect_failure(1, "(1, 2)", "LEN");
  expect_failure(2, "{'b': 2, 'a': 1}", "DICT_KEYS");  // same keys, another order
  expect_failure(3, "torch.sigmoid", "ID_MATCH");
  EXPECT_TRUE(check(set, f));
}

// Issue 42: an nn.Module by its class, how the names the trace read
// resolve and its hooks, not its identity; identity comparisons the trace
// made by DISTINCT_OBJECTS.
TEST(Guards, ModuleMatchAndDistinctObjects) {
  PyRun_SimpleString(
      "import torch\n"
      "class _GuardMLP(torch.nn.Module):\n"
      "    def __init__(self):\n"
      "        super().__init__(); self.a = torch.nn.Linear(2, 2)\n"
      "    def helper(self, x): return x\n");
  PyObject* main_dict = PyModule_GetDict(PyImport_AddModule("__main__"));
  auto make = [&]() { return PyObject_CallNoArgs(PyDict_GetItemString(main_dict, "_GuardMLP")); };
  Frame f;
  f.locals = {make(), make()};
  GuardSet set;
  Guard m{GuardKind::module_match, Source::local(0, "m"),
          PyRef::borrow(reinterpret_cast<PyObject*>(Py_TYPE(f.locals[0])))};
  m.no_module_hooks = true;
  m.absent.emplace_back(ModuleTable::instance_dict, PyRef::steal(PyUnicode_InternFromString("helper")));
  m.absent.emplace_back(ModuleTable::parameters, PyRef::steal(PyUnicode_InternFromString("a")));
  set.add(m);
  Guard distinct{GuardKind::distinct_objects, nullptr};
  distinct.sources = {Source::local(0, "m"), Source::local(1, "n")};
  set.add(distinct);
  EXPECT_EQ(set.guards()[0].to_string(),
            "MODULE_MATCH L['m'] _GuardMLP without __dict__['helper'], _parameters['a'] and NO_MODULE_HOOKS");
  EXPECT_TRUE(check(set, f));
  // Another instance of the class: the same compile.
  PyObject* other = make();
  std::swap(f.locals[0], other);
  EXPECT_TRUE(check(set, f));
  std::swap(f.locals[0], other);
  Py_DECREF(other);
  auto expect_failure = [&](const char* statement, const char* guard) {
    PyObject* saved = f.locals[0];
    f.locals[0] = make();
    PyDict_SetItemString(main_dict, "_m", f.locals[0]);
    PyRun_SimpleString(statement);
    std::string failed;
    EXPECT_FALSE(check(set, f, &failed)) << statement;
    EXPECT_EQ(failed.rfind(guard, 0), 0u) << failed;
    Py_DECREF(f.locals[0]);
    f.locals[0] = saved;
  };
  expect_failure("_m.helper = lambda x: x * 2", "MODULE_MATCH");  // shadows the method the trace inlined
  expect_failure("_m._parameters['a'] = torch.nn.Parameter(torch.ones(1))", "MODULE_MATCH");  // found in an earlier table
  expect_failure("_m.register_forward_hook(lambda *a: None)", "MODULE_MATCH");
  expect_failure("_m.__class__ = type('_Sub', (type(_m),), {})", "MODULE_MATCH");
  // The two modules the trace found distinct, one object now.
  PyObject* saved = f.locals[1];
  f.locals[1] = Py_NewRef(f.locals[0]);
  std::string failed;
  EXPECT_FALSE(check(set, f, &failed));
  EXPECT_EQ(failed.rfind("DISTINCT_OBJECTS", 0), 0u) << failed;
  Py_DECREF(f.locals[1]);
  f.locals[1] = saved;
  EXPECT_TRUE(check(set, f));
}

TEST(Guards, GlobalsAttributesItemsAndSameObject) {
  Frame f;
  PyObject* t = eval("torch.zeros(2)");
  f.locals = {Py_NewRef(t), Py_NewRef(t)};
  PyObject* cfg = eval("type('Cfg', (), {'scale': 2})()");
  PyDict_SetItemString(f.globals, "cfg", cfg);
  PyObject* table = eval("{'k': [10, 20]}");
  PyDict_SetItemString(f.globals, "table", table);
  GuardSet set;
  set.add(Guard{GuardKind::const_eq, Source::attr(Source::global("cfg"), "scale"), PyRef::steal(eval("2"))});
  PyObject* key = PyUnicode_FromString("k");
  PyObject* one = PyLong_FromLong(1);
  set.add(Guard{GuardKind::const_eq, Source::item(Source::item(Source::global("table"), key), one), PyRef::steal(eval("20"))});
  Guard same{GuardKind::same_object, Source::local(1, "b")};
  same.other = Source::local(0, "a");
  set.add(same);
  EXPECT_TRUE(check(set, f));
  PyObject_SetAttrString(cfg, "scale", PyLong_FromLong(3));
  std::string failed;
  EXPECT_FALSE(check(set, f, &failed));
  EXPECT_EQ(failed, "CONST_EQ G['cfg'].scale == 2: expected 2, actual 3");
  PyObject_SetAttrString(cfg, "scale", PyLong_FromLong(2));
  Py_DECREF(f.locals[1]);
  f.locals[1] = eval("torch.zeros(2)");
  EXPECT_FALSE(check(set, f, &failed));
  EXPECT_EQ(failed, "SAME_OBJECT L['b'] is L['a']: not the same object");
  Py_DECREF(key);
  Py_DECREF(one);
  Py_DECREF(cfg);
  Py_DECREF(table);
  Py_DECREF(t);
}

TEST(Guards, GradModeIsGlobalState) {
  Frame f;
  GuardSet set;
  Guard g{GuardKind::grad_mode};
  g.flag = grad_mode_enabled();
  set.add(g);
  EXPECT_TRUE(check(set, f));
  PyObject* r = eval("torch.set_grad_enabled(False)");
  Py_XDECREF(r);
  EXPECT_FALSE(check(set, f));
  r = eval("torch.set_grad_enabled(True)");
  Py_XDECREF(r);
  EXPECT_TRUE(check(set, f));
}


// recompiles logs say what failed: the expected and the actual value.
TEST(Guards, FailuresNameExpectedAndActualValues) {
  Frame f;
  f.locals = {eval("torch.ones(1, 3)"), eval("[1, 2]"), eval("5")};
  GuardSet set;
  set.add(tensor_guard(f.locals[0], 0));
  Guard len{GuardKind::length, Source::local(1, "xs"), PyRef::borrow(reinterpret_cast<PyObject*>(&PyList_Type))};
  len.length = 2;
  set.add(len);
  set.add(Guard{GuardKind::const_eq, Source::local(2, "n"), PyRef::steal(eval("5"))});
  auto failure = [&](int slot, const char* value) {
    PyObject* saved = f.locals[static_cast<size_t>(slot)];
    f.locals[static_cast<size_t>(slot)] = eval(value);
    std::string failed;
    EXPECT_FALSE(check(set, f, &failed)) << value;
    Py_DECREF(f.locals[static_cast<size_t>(slot)]);
    f.locals[static_cast<size_t>(slot)] = saved;
    return failed.substr(failed.find(": ") + 2);
  };
  EXPECT_EQ(failure(0, "torch.ones(2, 3)"), "size mismatch at index 0: expected 1, actual 2");
  EXPECT_EQ(failure(0, "torch.ones(1, 3, 1)"), "size count mismatch: expected 2, actual 3");
  EXPECT_EQ(failure(0, "torch.ones(1, 3, dtype=torch.float64)"), "dtype mismatch: expected Float, actual Double");
  EXPECT_EQ(failure(0, "torch.ones(1, 3, requires_grad=True)"), "requires_grad mismatch: expected False, actual True");
  EXPECT_EQ(failure(1, "[1, 2, 3]"), "length mismatch: expected 2, actual 3");
  EXPECT_EQ(failure(1, "(1, 2)"), "type mismatch: expected list, actual tuple");
  EXPECT_EQ(failure(2, "6"), "expected 5, actual 6");
  EXPECT_TRUE(check(set, f));
}

// The debug check (config.debug_check_guards) flags identity guards on
// objects made afresh by every read: they can never pass on the next call.
TEST(Guards, IdentityOfAFreshObjectIsUnstable) {
  Frame f;
  f.locals = {eval("torch.relu"), eval("torch.no_grad().__exit__")};
  PyObject* holder = eval("type('Holder', (), {'items': []})()");
  PyDict_SetItemString(f.globals, "holder", holder);
  PyObject* stored = eval("[].append");  // stored as an attribute: the same object on every read
  PyObject_SetAttrString(holder, "stored", stored);
  auto unstable = [&](Guard g) {
    GuardSet set;
    set.add(std::move(g));
    return compile_guards(set)->unstable_guard(f.view());
  };
  EXPECT_EQ(unstable(Guard{GuardKind::id_match, Source::local(0, "f"), PyRef::borrow(f.locals[0])}), "");
  EXPECT_NE(unstable(Guard{GuardKind::id_match, Source::local(1, "m"), PyRef::borrow(f.locals[1])}).find("ID_MATCH L['m']"),
            std::string::npos);
  PyObject* items = PyObject_GetAttrString(holder, "items");
  PyObject* append = PyObject_GetAttrString(items, "append");
  Py_DECREF(items);
  EXPECT_NE(unstable(Guard{GuardKind::id_match, Source::attr(Source::attr(Source::global("holder"), "items"), "append"),
                           PyRef::steal(append)}),
            "");
  EXPECT_EQ(unstable(Guard{GuardKind::id_match, Source::attr(Source::global("holder"), "stored"), PyRef::borrow(stored)}), "");
  Py_DECREF(stored);
  Py_DECREF(holder);
}

// A guard whose read raises does not hold and drops the error (the retrace
// meets it again at the user's line), but an interruption (a Ctrl-C that
// arrives while a property runs, a MemoryError) is left set for on_frame to
// raise: dropped, it would be lost.
TEST(Guards, AReadThatRaisesFailsButAnInterruptionStaysSet) {
  Frame f;
  PyObject* cfg = eval("type('Cfg', (), {'error': None, 'scale': property("
                       "lambda self: 2 if self.error is None else (_ for _ in ()).throw(self.error))})()");
  PyDict_SetItemString(f.globals, "cfg", cfg);
  GuardSet set;
  set.add(Guard{GuardKind::const_eq, Source::attr(Source::global("cfg"), "scale"), PyRef::steal(eval("2"))});
  EXPECT_TRUE(check(set, f));
  auto raising = [&](const char* error) {
    PyObject* e = eval(error);
    PyObject_SetAttrString(cfg, "error", e);
    Py_DECREF(e);
    std::string failed;
    bool held = check(set, f, &failed);
    PyObject_SetAttrString(cfg, "error", Py_None);
    return held;
  };
  EXPECT_FALSE(raising("RuntimeError('not ready')"));
  EXPECT_FALSE(PyErr_Occurred());
  EXPECT_FALSE(raising("KeyError('k')"));
  EXPECT_FALSE(PyErr_Occurred());
  EXPECT_FALSE(raising("KeyboardInterrupt()"));
  EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_KeyboardInterrupt));
  PyErr_Clear();
  EXPECT_FALSE(raising("MemoryError()"));
  EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_MemoryError));
  PyErr_Clear();
  EXPECT_TRUE(check(set, f));
  Py_DECREF(cfg);
}

}  // namespace
}  // namespace tj::runtime
