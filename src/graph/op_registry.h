// The op registry: every call_function target is an ATen operator overload
// found in c10::Dispatcher (`aten::add.Tensor`), or a builtin: `getitem`
// (element of a tuple/list result) and the integer ops on sizes of dynamic
// shapes (`sym_size`, `sym_mul`, `sym_lt`, ...: graph/sym_ints.h).
//
// `get("aten::add.Tensor")` names an overload directly. `lookup("aten::add",
// kinds, kwargs)` chooses one from the abstract kinds of the arguments, by
// the schema: every overload whose parameters accept the arguments gets a
// cost (0 per exact match, 1 per conversion such as int -> float or int ->
// Scalar, 3 per number passed for a Tensor parameter), and the cheapest wins;
// ties go to the default overload, then by name. Policy: a Python number is
// matched to a `Scalar` overload when one exists (`x + 2` -> `add.Scalar`),
// so graphs hold no scalar tensors; only where the op has no Scalar overload
// is it passed to the Tensor parameter, and the interpreter then wraps it as
// eager does (a 0-dim "wrapped number" tensor, which does not promote).
//
// Each OpInfo records traits: `mutates` / `inplace` / `out` / `view` come from
// the schema's alias annotations (`Tensor(a!)`, `Tensor(a)`), `random` from a
// Generator parameter or a small name table, `pointwise` / `reduction` from
// small name tables. Derivatives are LibTorch's own (AOT records them).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "support/expected.h"

namespace c10 {
class OperatorHandle;
struct FunctionSchema;
}  // namespace c10

namespace tj::graph {

// The abstract kind of one argument, as the tracer knows it.
enum class ArgKind {
  Tensor,
  Int,
  Float,
  Bool,
  Scalar,  // a number of no particular type
  None,
  String,
  ScalarType,
  Device,
  Layout,
  MemoryFormat,
  IntList,
  FloatList,
  BoolList,
  TensorList,
  OptionalTensorList,  // a list of tensors and Nones (index)
};
std::string_view arg_kind_name(ArgKind kind);

struct OpTraits {
  bool pointwise = false;
  bool reduction = false;
  bool view = false;     // a result aliases an input without writing it
  bool inplace = false;  // writes its first argument and returns it (`add_`)
  bool out = false;      // writes `out=` arguments
  bool mutates = false;  // writes any argument (inplace, out, copy_, ...)
  bool random = false;   // consumes random numbers
  bool check = false;    // returns nothing and writes nothing: called for the error it may raise
  bool backward = false;  // runs autograd's backward and frees its graph (tracejit::autograd_grad)
  // May not be removed, duplicated or reordered freely.
  bool side_effecting() const { return mutates || random || check || backward; }
};

// The size builtins: sym_size(tensor, dim) and Python's int arithmetic and
// comparisons on two ints (a node or a constant each).
// item: the int value of a 0-d integer tensor (`x[:lengths[0]]`), known only
// when the graph runs (graph/unbacked_sizes.h).
enum class SymOp { none, size, item, add, sub, mul, floordiv, mod, pow, eq, ne, lt, le, gt, ge };

struct OpInfo {
  std::string name;      // "aten::add"
  std::string overload;  // "Tensor"; "" for the default overload
  OpTraits traits;
  bool is_getitem = false;
  // `autograd_function(name, (inputs...), (outputs...), (saved...))`: the
  // outputs of a custom autograd.Function, given its backward body `name`
  // (graph/autograd_function.h). Returns a tuple; a getitem per output.
  bool is_autograd_function = false;
  SymOp sym = SymOp::none;
  // getitem, autograd_function or a size builtin: no ATen operator, no schema.
  bool is_builtin() const { return is_getitem || is_autograd_function || sym != SymOp::none; }

  std::string qualified_name() const;  // "aten::add.Tensor", "aten::sin"
  std::string python_target() const;   // "aten.add.Tensor", "aten.sin.default", "getitem"
  std::string base_name() const;       // "add"
  // The base name less an in-place op's trailing `_` ("add_" -> "add"); a
  // dunder name keeps its underscores ("__and__"). Op tables are keyed by it.
  std::string stem_name() const;
  // Only for ATen ops (not getitem).
  const c10::OperatorHandle& handle() const;
  const c10::FunctionSchema& schema() const;

  std::shared_ptr<const c10::OperatorHandle> handle_;
};

class OpRegistry {
 public:
  static OpRegistry& instance();

  // "aten::add.Tensor", "aten::sin" (default overload), or the Python spelling
  // "aten.add.Tensor" / "aten.sin.default"; also "getitem", "sym_size", ...
  Expected<const OpInfo*> get(std::string_view name);
  // Chooses the overload of `name` ("aten::add") for these arguments.
  Expected<const OpInfo*> lookup(std::string_view name, const std::vector<ArgKind>& positional,
                                 const std::vector<std::pair<std::string, ArgKind>>& kwargs = {});
  const OpInfo& getitem();
  const OpInfo& autograd_function();
  const OpInfo& sym(SymOp op);
  // Overload names of `name`, sorted ("" first).
  std::vector<std::string> overloads(std::string_view name);


 private:
  OpRegistry();
  Expected<const OpInfo*> get_locked(const std::string& name, const std::string& overload);
  void index_overloads_locked();

  std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<OpInfo>> ops_;  // by qualified name
  std::unordered_map<std::string, std::vector<std::string>> overloads_;
  // lookup's choices, by name and argument kinds (the tracer asks the same
  // questions for every op it records)
  std::unordered_map<std::string, const OpInfo*> chosen_;
  std::unique_ptr<OpInfo> getitem_;
  std::unique_ptr<OpInfo> autograd_function_;
  std::vector<std::unique_ptr<OpInfo>> sym_;  // by SymOp
};

}  // namespace tj::graph
