// The table of ops whose result depends on tensor data; see
// data_dependent_ops.h.
#include "graph/data_dependent_ops.h"

#include <string_view>
#include <unordered_map>

#include "graph/op_registry.h"

namespace tj::graph {

namespace {

using Stack = c10::ArrayRef<c10::IValue>;
// Given the overload name and the arguments: whether this call is one that
// depends on data; nullptr: every call does.
using Condition = bool (*)(std::string_view overload, const Stack& stack);

bool is_mask(const c10::IValue& v) {
  if (!v.isTensor()) return false;
  const c10::ScalarType t = v.toTensor().scalar_type();
  return t == c10::kBool || t == c10::kByte;
}

bool absent(const Stack& stack, size_t i) { return i >= stack.size() || stack[i].isNone(); }

// index.Tensor(self, Tensor?[] indices): a boolean mask selects a count of elements.
bool indexed_by_mask(std::string_view, const Stack& stack) {
  if (stack.size() < 2 || !stack[1].isList()) return false;
  for (const c10::IValue& index : stack[1].toListRef())
    if (is_mask(index)) return true;
  return false;
}

// where(condition): the indices of the true elements (the other overloads select elementwise).
bool condition_alone(std::string_view, const Stack& stack) { return stack.size() == 1; }

// repeat_interleave.Tensor(repeats, *, output_size=None) and
// .self_Tensor(self, repeats, dim=None, *, output_size=None): the total of
// the repeats, unless output_size gives it; .self_int repeats a number.
bool repeats_without_output_size(std::string_view overload, const Stack& stack) {
  if (overload == "Tensor") return absent(stack, 1);
  if (overload == "self_Tensor") return absent(stack, 3);
  return false;
}

// one_hot(self, num_classes=-1): without num_classes, the data's maximum + 1.
bool without_num_classes(std::string_view, const Stack& stack) {
  return stack.size() >= 2 && stack[1].isInt() && stack[1].toInt() < 0;
}

const std::unordered_map<std::string_view, Condition>& table() {
  static const std::unordered_map<std::string_view, Condition> ops = {
      // an output's size counts the data
      {"aten::nonzero", nullptr},
      {"aten::nonzero_numpy", nullptr},
      {"aten::argwhere", nullptr},
      {"aten::masked_select", nullptr},
      {"aten::_unique", nullptr},
      {"aten::_unique2", nullptr},
      {"aten::unique_dim", nullptr},
      {"aten::unique_consecutive", nullptr},
      {"aten::unique_dim_consecutive", nullptr},
      {"aten::bincount", nullptr},
      {"torchvision::nms", nullptr},
      {"aten::index", indexed_by_mask},
      {"aten::where", condition_alone},
      {"aten::repeat_interleave", repeats_without_output_size},
      {"aten::one_hot", without_num_classes},
      // a Python value read from the data
      {"aten::_local_scalar_dense", nullptr},
      {"aten::item", nullptr},
      {"aten::is_nonzero", nullptr},
      {"aten::equal", nullptr},
      {"aten::allclose", nullptr},
  };
  return ops;
}

// Ops AOT capture refuses in every call, beyond those of table(): an
// assertion on the data (_assert_async), a Python bool rather than a tensor
// (is_same_size), a histogram whose range defaults to the data's minimum
// and maximum (histc), and repeat_interleave in every overload, also those
// whose size output_size gives.
const std::string_view kCaptureRefusals[] = {"aten::_assert_async", "aten::is_same_size", "aten::histc",
                                             "aten::repeat_interleave"};

}  // namespace

bool result_depends_on_data(std::string_view name, std::string_view overload, c10::ArrayRef<c10::IValue> stack) {
  auto it = table().find(name);
  if (it == table().end()) return false;
  return it->second == nullptr || it->second(overload, stack);
}

bool result_depends_on_data(const OpInfo& op, const std::vector<c10::IValue>& stack) {
  if (op.is_builtin()) return false;
  return result_depends_on_data(op.name, op.overload, stack);
}

bool capture_refuses(std::string_view name, std::string_view overload, c10::ArrayRef<c10::IValue> stack) {
  for (std::string_view refused : kCaptureRefusals)
    if (name == refused) return true;
  return result_depends_on_data(name, overload, stack);
}

}  // namespace tj::graph
