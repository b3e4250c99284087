// The one IR every later stage shares: an FX-like graph of ATen operators.
//
// A `Graph` owns an ordered list of `Node`s. Each node has a kind (the FX
// kinds `placeholder`, `get_attr`, `call_function`, `output`), a unique
// readable name (`add`, `add_1`, ...), a target (for `call_function` an ATen
// overload from the OpRegistry, or the builtin `getitem`), positional args and
// kwargs. An `Arg` is a small variant: another node, a constant (None, bool,
// int, float, string, dtype, device, layout, memory format) or a list/tuple of
// args. Every node keeps the list of nodes that use it; the graph updates those
// lists itself on create, `set_args`, `replace_all_uses_with` and `erase`, so
// args and users can only change together. Per-node metadata (`NodeMeta`)
// carries the "fake" tensor description of what the node produces, the Python
// source location that created it and its tags (`NodeTags`: typed facts the
// tracer, AOT and the passes record for later stages, written in the text
// form as `tags("grad_enabled"="0")`).
//
// Tensor constants (parameters, folded constants) live in the graph's
// attribute table and are read by `get_attr` nodes.
//
// `lint()` (lint.h) checks every invariant; passes run it in debug builds.
// This header stays light: no ATen operator headers, no CPython.
#pragma once

#include <algorithm>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

namespace at {
class Tensor;
}

namespace tj::graph {

class Graph;
class Node;
struct OpInfo;
struct AutogradFunctionBody;  // graph/autograd_function.h

enum class NodeKind { placeholder, get_attr, call_function, output };
std::string_view node_kind_name(NodeKind kind);

struct NoneArg {
  bool operator==(const NoneArg&) const = default;
};

class Arg;

// A list (`[a, b]`) or tuple (`(a, b)`) of args.
struct ArgList {
  std::vector<Arg> items;
  bool is_tuple = false;
};

class Arg {
 public:
  using Value = std::variant<NoneArg, Node*, bool, int64_t, double, std::string, c10::ScalarType,
                             c10::Device, c10::Layout, c10::MemoryFormat, ArgList>;

  Arg() : v_(NoneArg{}) {}
  Arg(NoneArg) : v_(NoneArg{}) {}
  Arg(Node* node) : v_(node) { assert_node(node); }
  Arg(bool b) : v_(b) {}
  Arg(int i) : v_(int64_t{i}) {}
  Arg(int64_t i) : v_(i) {}
  Arg(double d) : v_(d) {}
  Arg(const char* s) : v_(std::string(s)) {}
  Arg(std::string s) : v_(std::move(s)) {}
  Arg(c10::ScalarType t) : v_(t) {}
  Arg(c10::Device d) : v_(d) {}
  Arg(c10::Layout l) : v_(l) {}
  Arg(c10::MemoryFormat m) : v_(m) {}
  Arg(ArgList l) : v_(std::move(l)) {}

  static Arg list(std::vector<Arg> items) { return Arg(ArgList{std::move(items), false}); }
  static Arg tuple(std::vector<Arg> items) { return Arg(ArgList{std::move(items), true}); }
  static Arg ints(const std::vector<int64_t>& values);

  const Value& value() const { return v_; }
  template <class T>
  bool is() const { return std::holds_alternative<T>(v_); }
  template <class T>
  const T& as() const { return std::get<T>(v_); }

  bool is_none() const { return is<NoneArg>(); }
  bool is_node() const { return is<Node*>(); }
  Node* node() const { return std::get<Node*>(v_); }
  bool is_list() const { return is<ArgList>(); }
  const std::vector<Arg>& items() const { return std::get<ArgList>(v_).items; }

  // Calls `fn(Node*)` for every node this arg mentions, lists included, in order.
  template <class Fn>
  void for_each_node(Fn&& fn) const {
    if (is_node()) return fn(node());
    if (is_list())
      for (const Arg& item : items()) item.for_each_node(fn);
  }
  // A copy with every node mapped through `fn(Node*) -> Node*`.
  template <class Fn>
  Arg map_nodes(Fn&& fn) const {
    if (is_node()) return Arg(fn(node()));
    if (!is_list()) return *this;
    ArgList out{{}, std::get<ArgList>(v_).is_tuple};
    for (const Arg& item : items()) out.items.push_back(item.map_nodes(fn));
    return Arg(std::move(out));
  }

 private:
  static void assert_node(Node* node);
  Value v_;
};

using Kwarg = std::pair<std::string, Arg>;

// What a tensor looks like without its data: the "fake" tensor.
struct TensorMeta {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t storage_offset = 0;
  c10::ScalarType dtype = c10::ScalarType::Float;
  c10::Device device = c10::Device(c10::DeviceType::CPU);
  bool requires_grad = false;
  // Tensors with the same id share storage (views, in-place results);
  // -1 means unknown. Ids are handed out by Graph::new_storage_id().
  int64_t storage_id = -1;
  // False for an undefined tensor in a sequence result (None in Python:
  // `_native_multi_head_attention`'s weights when not asked for). Nothing
  // reads it: the tracer binds the element to None, and no getitem exists.
  bool defined = true;

  static TensorMeta contiguous(std::vector<int64_t> sizes, c10::ScalarType dtype);
  // The description of a real tensor (storage_id left at -1).
  static TensorMeta of(const at::Tensor& tensor);
  static TensorMeta undefined();
  bool is_contiguous() const;
  bool operator==(const TensorMeta&) const = default;
};

struct SourceLoc {
  std::string file;
  int line = 0;
  std::string code;
  bool operator==(const SourceLoc&) const = default;
};

// What earlier stages record about a node for later ones, beyond its value.
// Each field is written in the text form as one tag (`"name"="value"`),
// only when set (tag_texts, set_tag); the names are the text form's.
struct NodeTags {
  // The grad mode a node runs under when it is not the graph's entry mode
  // (traced inside `with torch.no_grad():` or `enable_grad()`); unset: the
  // mode the graph is called under. Text: "1" / "0".
  std::optional<bool> grad_enabled;
  // A placeholder whose storage receives output `i` of the graph (AOT's
  // runtime wrapper donates an input written in place; jit/lowering.cpp
  // writes the output's kernel straight into it).
  std::optional<int64_t> donated_to_output;
  // A placeholder that requires grad whose gradient nothing asks for (AOT's
  // capture of a call that computes no gradient; passes/freeze.h).
  bool grad_unused = false;
  // A placeholder that freezing made a constant of the graph (passes/freeze.h).
  bool frozen_constant = false;
  // The out-of-place op functionalization recorded for an in-place step of
  // a derivative formula (maximum's `masked_fill_`), whose result eager
  // lays out as its first argument (compile/aot/inplace_steps.h). Read only
  // for gradients' strides on size-1 dims; no value depends on it.
  bool inplace_step = false;

  bool empty() const { return *this == NodeTags{}; }
  bool operator==(const NodeTags&) const = default;
};

// The set tags as the text form writes them, ordered by name:
// {"grad_enabled", "0"}, {"donated_to_output", "2"}, ...
std::vector<std::pair<std::string, std::string>> tag_texts(const NodeTags& tags);
// Sets the tag `name` from its text; false for an unknown name or a value
// that is not one the tag takes.
bool set_tag(NodeTags& tags, std::string_view name, std::string_view value);

struct NodeMeta {
  // The fake value: one tensor, a sequence of tensors (tuple/list returns),
  // or nothing known (non-tensor results, not yet inferred).
  std::vector<TensorMeta> fake;
  bool fake_is_sequence = false;
  std::optional<SourceLoc> loc;
  NodeTags tags;
  // A size builtin's int (sym_size, sym_mul, ...; comparisons 0/1) for the
  // sizes the metas describe (graph/sym_ints.h).
  std::optional<int64_t> sym_value;
  // A data-dependent op (nonzero, x[mask], unique, ...): its result's sizes
  // are known only when it runs (graph/unbacked_sizes.h).
  bool unbacked = false;

  // The single tensor this node produces, or nullptr.
  const TensorMeta* tensor() const { return !fake_is_sequence && fake.size() == 1 ? &fake[0] : nullptr; }
  void set_tensor(TensorMeta m) {
    fake = {std::move(m)};
    fake_is_sequence = false;
  }
};

class Node {
 public:
  NodeKind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  // placeholder/get_attr: the input/attribute name; call_function: the op's
  // Python spelling (`aten.add.Tensor`, `getitem`); output: "output".
  const std::string& target() const { return target_; }
  // The operator of a call_function node; nullptr otherwise.
  const OpInfo* op() const { return op_; }
  Graph* graph() const { return graph_; }

  const std::vector<Arg>& args() const { return args_; }
  const std::vector<Kwarg>& kwargs() const { return kwargs_; }
  const Arg* kwarg(std::string_view name) const;
  // Nodes using this one, each once, in the order they started using it.
  const std::vector<Node*>& users() const { return users_; }
  // Distinct nodes this node uses, in argument order.
  std::vector<Node*> inputs() const;

  NodeMeta& meta() { return meta_; }
  const NodeMeta& meta() const { return meta_; }

  // Replace the arguments; users lists of old and new inputs follow.
  void set_args(std::vector<Arg> args, std::vector<Kwarg> kwargs);
  void set_args(std::vector<Arg> args) { set_args(std::move(args), kwargs_); }
  // Make this node use `to` wherever it used `from`.
  void replace_input(Node* from, Node* to);
  // Make every user of this node use `to` instead.
  void replace_all_uses_with(Node* to);

 private:
  friend class Graph;
  friend struct GraphTestAccess;  // tests that corrupt a graph on purpose
  Node() = default;
  void link_inputs();
  void unlink_inputs();

  Graph* graph_ = nullptr;
  NodeKind kind_ = NodeKind::placeholder;
  std::string name_;
  std::string target_;
  const OpInfo* op_ = nullptr;
  std::vector<Arg> args_;
  std::vector<Kwarg> kwargs_;
  std::vector<Node*> users_;
  NodeMeta meta_;
  std::list<std::unique_ptr<Node>>::iterator self_;
};

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // A deep copy (nodes, names, metadata, attributes; attribute tensors are shared).
  std::unique_ptr<Graph> clone() const;

  // Node creation, at the insertion point (the end unless moved).
  Node* placeholder(std::string_view name, std::optional<TensorMeta> meta = std::nullopt);
  Node* get_attr(std::string_view attr_name);
  Node* call(const OpInfo& op, std::vector<Arg> args, std::vector<Kwarg> kwargs = {},
             std::string_view name_hint = {});
  Node* output(Arg result);

  // New nodes go before `before` (nullptr: at the end).
  void set_insert_point(Node* before) { insert_before_ = before; }
  Node* insert_point() const { return insert_before_; }
  // Moves `node` to just before `before` (nullptr: the end).
  void move_before(Node* node, Node* before);

  // Removes a node nobody uses (asserts that).
  void erase(Node* node);

  // Nodes in order (a snapshot: safe to mutate the graph while walking it).
  std::vector<Node*> nodes() const;
  size_t size() const { return nodes_.size(); }
  std::vector<Node*> placeholders() const;
  Node* output_node() const;  // the last output node, or nullptr
  Node* find(std::string_view name) const;
  bool contains(const Node* node) const;

  // A fresh name derived from `hint` (a valid Python identifier, unused so far).
  std::string unique_name(std::string_view hint);
  // Renames `node` to `name` if that is a valid identifier no live node has.
  bool rename(Node* node, std::string_view name);
  int64_t new_storage_id() { return next_storage_id_++; }
  // Later new_storage_id() calls return ids >= `id` (for parsed graphs).
  void reserve_storage_ids(int64_t id) { next_storage_id_ = std::max(next_storage_id_, id); }

  // Tensor constants read by get_attr nodes.
  void set_attr(const std::string& name, const at::Tensor& value);
  const at::Tensor* attr(std::string_view name) const;
  std::vector<std::string> attr_names() const;  // sorted

  // The backward bodies of `autograd_function` nodes (graph/autograd_function.h),
  // by the name the node's first argument gives. Bodies are immutable, so
  // `clone()` shares them.
  void set_autograd_function(const std::string& name, std::shared_ptr<const AutogradFunctionBody> body);
  std::shared_ptr<const AutogradFunctionBody> autograd_function(std::string_view name) const;
  std::vector<std::string> autograd_function_names() const;  // sorted

 private:
  friend struct GraphTestAccess;
  Node* insert(std::unique_ptr<Node> node);

  std::list<std::unique_ptr<Node>> nodes_;
  Node* insert_before_ = nullptr;
  std::map<std::string, int, std::less<>> name_counts_;
  std::set<std::string, std::less<>> used_names_;
  std::map<std::string, Node*, std::less<>> by_name_;
  int64_t next_storage_id_ = 0;
  struct AttrTable;
  std::unique_ptr<AttrTable> attrs_;
};

}  // namespace tj::graph
