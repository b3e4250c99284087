// Value's kinds and payloads (src/tracer/values.h): each kind's own fields
// are read through its typed accessor, and the accessors that may be asked
// of any value (bound_self, super_self, tensor_key, is_module_slice) answer
// only for the kind and payload they name.
#include <gtest/gtest.h>

#include <string>

#include "py_test_util.h"
#include "tracer/values.h"

namespace tj::tracer {
namespace {

ValuePtr int_value(long n) { return Value::constant_steal(PyLong_FromLong(n)); }
ValuePtr str_value(const char* s) { return Value::constant_steal(PyUnicode_FromString(s)); }

ValuePtr small_dict() { return Value::dict({str_value("a"), str_value("b")}, {int_value(1), int_value(2)}); }

std::string repr_of(const ValuePtr& v) {
  PyRef py = v->as_python();
  if (!py) return "<null>";
  PyRef r = PyRef::steal(PyObject_Repr(py.get()));
  return r ? PyUnicode_AsUTF8(r.get()) : "<error>";
}

TEST(Values, MethodOfAContainerKeepsItsSelfAndName) {
  ValuePtr list = Value::sequence(ValueKind::list, {int_value(1)});
  ValuePtr m = Value::tensor_method(list, "append");
  EXPECT_EQ(m->kind, ValueKind::tensor_method);
  EXPECT_EQ(m->as_method().self, list);
  EXPECT_EQ(m->as_method().name, "append");
  EXPECT_EQ(m->type_name(), "Tensor.append");
  EXPECT_EQ(m->bound_self(), nullptr);  // a tensor_method is not a bound callable
}

TEST(Values, BoundCallableCarriesItsSelf) {
  ValuePtr self = Value::object(Py_None);
  PyObject* len = PyDict_GetItemString(PyEval_GetBuiltins(), "len");
  ValuePtr bound = Value::bound_method(len, self, "size");
  EXPECT_EQ(bound->kind, ValueKind::callable);
  EXPECT_EQ(bound->obj.get(), len);
  EXPECT_EQ(bound->bound_self(), self);
  EXPECT_EQ(bound->as_method().name, "size");
  EXPECT_EQ(Value::callable(len)->bound_self(), nullptr);
}

TEST(Values, DictViewsReadTheirDictAtEachUse) {
  ValuePtr d = small_dict();
  ValuePtr keys = Value::dict_view(d, DictViewKind::keys);
  ValuePtr values = Value::dict_view(d, DictViewKind::values);
  ValuePtr items = Value::dict_view(d, DictViewKind::items);
  EXPECT_EQ(keys->as_dict_view().dict, d);
  EXPECT_EQ(items->as_dict_view().which, DictViewKind::items);
  EXPECT_EQ(keys->type_name(), "dict_keys");
  EXPECT_EQ(values->type_name(), "dict_values");
  EXPECT_EQ(items->type_name(), "dict_items");
  EXPECT_EQ(repr_of(keys), "dict_keys(['a', 'b'])");
  EXPECT_EQ(repr_of(values), "dict_values([1, 2])");
  EXPECT_EQ(repr_of(items), "dict_items([('a', 1), ('b', 2)])");
  d->keys.push_back(str_value("c"));
  d->items.push_back(int_value(3));
  ASSERT_EQ(items->view_items().size(), 3u);
  EXPECT_EQ(repr_of(items->view_items()[2]), "('c', 3)");
  EXPECT_TRUE(keys->is_python_constant());
}

TEST(Values, ModuleSliceIsAMarkedList) {
  ValuePtr slice = Value::sequence(ValueKind::list, {});
  EXPECT_FALSE(slice->is_module_slice());
  slice->payload = ModuleSlice{};
  EXPECT_TRUE(slice->is_module_slice());
  EXPECT_EQ(slice->type_name(), "list");
  ValuePtr tuple = Value::sequence(ValueKind::tuple, {});
  tuple->payload = ModuleSlice{};
  EXPECT_FALSE(tuple->is_module_slice());  // the marker means something on a list only
}

TEST(Values, FunctionPayloadHoldsItsQualifiedName) {
  PyRef code = bc::testing::function_code("def outer():\n    def inner(): pass\n    return inner\n", "outer");
  FunctionPayload payload;
  payload.defaults.push_back(int_value(7));
  ValuePtr fn = Value::function(code, "outer.<locals>.inner", std::move(payload));
  EXPECT_EQ(fn->kind, ValueKind::function);
  EXPECT_EQ(fn->obj.get(), code.get());
  EXPECT_EQ(fn->as_function().qualname, "outer.<locals>.inner");
  ASSERT_EQ(fn->as_function().defaults.size(), 1u);
  EXPECT_EQ(fn->bound_self(), nullptr);
}

TEST(Values, SuperAndTensorKeyPayloadsAnswerOnlyForObjects) {
  ValuePtr self = Value::object(Py_None);
  ValuePtr sup = Value::object(Py_None);
  sup->payload = SuperPayload{self};
  EXPECT_EQ(sup->super_self(), self);
  EXPECT_EQ(sup->tensor_key(), nullptr);
  EXPECT_EQ(self->super_self(), nullptr);

  ValuePtr input_key = Value::object(Py_None);
  input_key->payload = TensorKeyPayload{};
  ASSERT_NE(input_key->tensor_key(), nullptr);
  EXPECT_EQ(input_key->tensor_key()->tensor, nullptr);
  EXPECT_EQ(input_key->super_self(), nullptr);
}

TEST(Values, PartialWrapsItsCallableAndArguments) {
  PyObject* int_type = reinterpret_cast<PyObject*>(&PyLong_Type);
  ValuePtr p = Value::partial(Value::callable(int_type), {str_value("101")}, {{"base", int_value(2)}});
  EXPECT_EQ(p->kind, ValueKind::partial);
  EXPECT_EQ(p->as_partial().fn->obj.get(), int_type);
  ASSERT_EQ(p->as_partial().args.size(), 1u);
  ASSERT_EQ(p->as_partial().kwargs.size(), 1u);
  EXPECT_EQ(p->as_partial().kwargs[0].first, "base");
  EXPECT_EQ(p->type_name(), "functools.partial");
  EXPECT_EQ(p->bound_self(), nullptr);
  EXPECT_FALSE(p->is_python_constant());
  // As Python sees it: a real functools.partial over the same values.
  PyRef real = p->as_python();
  ASSERT_TRUE(real);
  PyRef r = PyRef::steal(PyObject_CallNoArgs(real.get()));
  ASSERT_TRUE(r);
  EXPECT_EQ(PyLong_AsLong(r.get()), 5);
}

}  // namespace
}  // namespace tj::tracer
