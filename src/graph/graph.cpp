// Graph and Node: creation, naming, use lists, erase, clone, attributes.
#include "graph/graph.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <charconv>
#include <unordered_map>

#include <ATen/core/Tensor.h>

#include "graph/op_registry.h"

namespace tj::graph {

std::string_view node_kind_name(NodeKind kind) {
  switch (kind) {
    case NodeKind::placeholder: return "placeholder";
    case NodeKind::get_attr: return "get_attr";
    case NodeKind::call_function: return "call_function";
    case NodeKind::output: return "output";
  }
  return "?";
}

void Arg::assert_node(Node* node) { assert(node && "an Arg node must not be null; use Arg() for None"); }

Arg Arg::ints(const std::vector<int64_t>& values) {
  std::vector<Arg> items;
  items.reserve(values.size());
  for (int64_t v : values) items.emplace_back(v);
  return list(std::move(items));
}

std::vector<std::pair<std::string, std::string>> tag_texts(const NodeTags& tags) {
  std::vector<std::pair<std::string, std::string>> out;  // in name order
  if (tags.donated_to_output) out.emplace_back("donated_to_output", std::to_string(*tags.donated_to_output));
  if (tags.frozen_constant) out.emplace_back("frozen_constant", "1");
  if (tags.grad_enabled) out.emplace_back("grad_enabled", *tags.grad_enabled ? "1" : "0");
  if (tags.grad_unused) out.emplace_back("grad_unused", "1");
  if (tags.inplace_step) out.emplace_back("inplace_step", "1");
  return out;
}

bool set_tag(NodeTags& tags, std::string_view name, std::string_view value) {
  if (name == "donated_to_output") {
    int64_t i = -1;
    auto res = std::from_chars(value.data(), value.data() + value.size(), i);
    if (res.ec != std::errc() || res.ptr != value.data() + value.size() || i < 0) return false;
    tags.donated_to_output = i;
    return true;
  }
  if (value != "0" && value != "1") return false;
  const bool on = value == "1";
  if (name == "grad_enabled") tags.grad_enabled = on;
  else if (name == "grad_unused" && on) tags.grad_unused = true;
  else if (name == "frozen_constant" && on) tags.frozen_constant = true;
  else if (name == "inplace_step" && on) tags.inplace_step = true;
  else return false;
  return true;
}

TensorMeta TensorMeta::of(const at::Tensor& t) {
  TensorMeta m;
  m.sizes = t.sizes().vec();
  m.strides = t.strides().vec();
  m.storage_offset = t.storage_offset();
  m.dtype = t.scalar_type();
  m.device = t.device();
  m.requires_grad = t.requires_grad();
  return m;
}

TensorMeta TensorMeta::undefined() {
  TensorMeta m;
  m.defined = false;
  return m;
}

TensorMeta TensorMeta::contiguous(std::vector<int64_t> sizes, c10::ScalarType dtype) {
  TensorMeta m;
  m.strides.assign(sizes.size(), 1);
  int64_t stride = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    m.strides[i] = stride;
    stride *= std::max<int64_t>(sizes[i], 1);
  }
  m.sizes = std::move(sizes);
  m.dtype = dtype;
  return m;
}

bool TensorMeta::is_contiguous() const {
  // As c10 computes it: a tensor with no elements is contiguous.
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return true;
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

// ---- Node ----

const Arg* Node::kwarg(std::string_view name) const {
  for (const Kwarg& kw : kwargs_)
    if (kw.first == name) return &kw.second;
  return nullptr;
}

std::vector<Node*> Node::inputs() const {
  std::vector<Node*> out;
  auto add = [&](Node* n) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  for (const Arg& a : args_) a.for_each_node(add);
  for (const Kwarg& kw : kwargs_) kw.second.for_each_node(add);
  return out;
}

void Node::link_inputs() {
  for (Node* in : inputs()) {
    assert(in->graph_ == graph_ && "a node may only use nodes of its own graph");
    in->users_.push_back(this);
  }
}

void Node::unlink_inputs() {
  for (Node* in : inputs()) {
    auto it = std::find(in->users_.begin(), in->users_.end(), this);
    assert(it != in->users_.end() && "use list out of sync");
    in->users_.erase(it);
  }
}

void Node::set_args(std::vector<Arg> args, std::vector<Kwarg> kwargs) {
  unlink_inputs();
  args_ = std::move(args);
  kwargs_ = std::move(kwargs);
  link_inputs();
}

void Node::replace_input(Node* from, Node* to) {
  auto map = [&](Node* n) { return n == from ? to : n; };
  std::vector<Arg> args;
  for (const Arg& a : args_) args.push_back(a.map_nodes(map));
  std::vector<Kwarg> kwargs;
  for (const Kwarg& kw : kwargs_) kwargs.emplace_back(kw.first, kw.second.map_nodes(map));
  set_args(std::move(args), std::move(kwargs));
}

void Node::replace_all_uses_with(Node* to) {
  assert(to != this && "replacing a node's uses with itself");
  std::vector<Node*> users = users_;
  for (Node* user : users) user->replace_input(this, to);
}

// ---- Graph ----

namespace {
// Names the generated Python needs for itself, and Python builtins a node
// name should not shadow (`max` becomes `max_1`, as in FX).
constexpr std::string_view kReservedNames[] = {
    "self", "torch", "operator", "inf", "nan", "output", "None", "True", "False", "abs", "all", "any", "bool",
    "dict", "float", "getattr", "id", "input", "int", "isinstance", "len", "list", "map", "max", "min", "object",
    "pow", "print", "range", "round", "set", "slice", "sorted", "str", "sum", "super", "tuple", "type", "zip"};
}  // namespace

struct Graph::AttrTable {
  std::map<std::string, at::Tensor, std::less<>> tensors;
  std::map<std::string, std::shared_ptr<const AutogradFunctionBody>, std::less<>> autograd_functions;
};

Graph::Graph() : attrs_(std::make_unique<AttrTable>()) {
  // Names the generated Python code needs for itself.
  for (std::string_view reserved : kReservedNames) used_names_.insert(std::string(reserved));
}

Graph::~Graph() {
  // Drop args first so no node outlives a node it points to.
  for (auto& n : nodes_) {
    n->args_.clear();
    n->kwargs_.clear();
  }
}

namespace {
bool is_python_keyword(std::string_view s) {
  static const char* const kKeywords[] = {
      "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif", "else",
      "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
      "not", "or", "pass", "raise", "return", "try", "while", "with", "yield"};
  for (const char* k : kKeywords)
    if (s == k) return true;
  return false;
}

std::string sanitize(std::string_view hint) {
  std::string s;
  for (char c : hint) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty()) s = "_tensor";
  if (std::isdigit(static_cast<unsigned char>(s[0]))) s = "_" + s;
  if (is_python_keyword(s)) s += "_";
  return s;
}
}  // namespace

std::string Graph::unique_name(std::string_view hint) {
  std::string base = sanitize(hint);
  int& count = name_counts_[base];
  for (;;) {
    std::string candidate = count == 0 ? base : base + "_" + std::to_string(count);
    ++count;
    if (used_names_.insert(candidate).second) return candidate;
  }
}

bool Graph::rename(Node* node, std::string_view name) {
  if (name == node->name_) return true;
  if (name.empty() || sanitize(name) != name || by_name_.count(name)) return false;
  for (std::string_view reserved : kReservedNames)
    if (name == reserved) return false;
  auto it = by_name_.find(node->name_);
  if (it != by_name_.end() && it->second == node) by_name_.erase(it);
  node->name_ = std::string(name);
  used_names_.insert(node->name_);
  by_name_[node->name_] = node;
  return true;
}

Node* Graph::insert(std::unique_ptr<Node> node) {
  Node* raw = node.get();
  raw->graph_ = this;
  auto pos = insert_before_ ? insert_before_->self_ : nodes_.end();
  raw->self_ = nodes_.insert(pos, std::move(node));
  by_name_[raw->name_] = raw;
  raw->link_inputs();
  return raw;
}

Node* Graph::placeholder(std::string_view name, std::optional<TensorMeta> meta) {
  std::unique_ptr<Node> n(new Node);
  n->kind_ = NodeKind::placeholder;
  n->name_ = unique_name(name);
  n->target_ = std::string(name);
  if (meta) n->meta_.set_tensor(std::move(*meta));
  return insert(std::move(n));
}

Node* Graph::get_attr(std::string_view attr_name) {
  std::unique_ptr<Node> n(new Node);
  n->kind_ = NodeKind::get_attr;
  n->name_ = unique_name(attr_name);
  n->target_ = std::string(attr_name);
  if (const at::Tensor* t = attr(attr_name)) {
    TensorMeta m;
    m.sizes = t->sizes().vec();
    m.strides = t->strides().vec();
    m.storage_offset = t->storage_offset();
    m.dtype = t->scalar_type();
    m.device = t->device();
    m.requires_grad = t->requires_grad();
    m.storage_id = new_storage_id();
    n->meta_.set_tensor(std::move(m));
  }
  return insert(std::move(n));
}

Node* Graph::call(const OpInfo& op, std::vector<Arg> args, std::vector<Kwarg> kwargs, std::string_view name_hint) {
  std::unique_ptr<Node> n(new Node);
  n->kind_ = NodeKind::call_function;
  n->op_ = &op;
  n->name_ = unique_name(name_hint.empty() ? std::string_view(op.base_name()) : name_hint);
  n->target_ = op.python_target();
  n->args_ = std::move(args);
  n->kwargs_ = std::move(kwargs);
  return insert(std::move(n));
}

Node* Graph::output(Arg result) {
  std::unique_ptr<Node> n(new Node);
  n->kind_ = NodeKind::output;
  n->name_ = by_name_.count("output") ? unique_name("output") : "output";
  n->target_ = "output";
  n->args_ = {std::move(result)};
  return insert(std::move(n));
}

void Graph::move_before(Node* node, Node* before) {
  assert(node != before && "moving a node before itself");
  auto dest = before ? before->self_ : nodes_.end();
  nodes_.splice(dest, nodes_, node->self_);
}

void Graph::erase(Node* node) {
  assert(node->graph_ == this && "erasing a node of another graph");
  assert(node->users_.empty() && "erasing a node that still has users");
  if (insert_before_ == node) insert_before_ = nullptr;
  node->unlink_inputs();
  node->args_.clear();
  node->kwargs_.clear();
  auto it = by_name_.find(node->name_);
  if (it != by_name_.end() && it->second == node) by_name_.erase(it);
  node->graph_ = nullptr;
  nodes_.erase(node->self_);
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

std::vector<Node*> Graph::placeholders() const {
  std::vector<Node*> out;
  for (const auto& n : nodes_)
    if (n->kind_ == NodeKind::placeholder) out.push_back(n.get());
  return out;
}

Node* Graph::output_node() const {
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it)
    if ((*it)->kind_ == NodeKind::output) return it->get();
  return nullptr;
}

Node* Graph::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

bool Graph::contains(const Node* node) const {
  for (const auto& n : nodes_)
    if (n.get() == node) return true;
  return false;
}

std::unique_ptr<Graph> Graph::clone() const {
  auto g = std::make_unique<Graph>();
  g->attrs_->tensors = attrs_->tensors;
  g->attrs_->autograd_functions = attrs_->autograd_functions;
  g->name_counts_ = name_counts_;
  g->used_names_ = used_names_;
  g->next_storage_id_ = next_storage_id_;
  std::unordered_map<const Node*, Node*> map;
  auto remap = [&](Node* n) {
    auto it = map.find(n);
    assert(it != map.end() && "clone: a node used before its definition");
    return it->second;
  };
  for (const auto& src : nodes_) {
    std::unique_ptr<Node> n(new Node);
    n->kind_ = src->kind_;
    n->name_ = src->name_;
    n->target_ = src->target_;
    n->op_ = src->op_;
    n->meta_ = src->meta_;
    for (const Arg& a : src->args_) n->args_.push_back(a.map_nodes(remap));
    for (const Kwarg& kw : src->kwargs_) n->kwargs_.emplace_back(kw.first, kw.second.map_nodes(remap));
    map[src.get()] = g->insert(std::move(n));
  }
  return g;
}

void Graph::set_attr(const std::string& name, const at::Tensor& value) { attrs_->tensors[name] = value; }

const at::Tensor* Graph::attr(std::string_view name) const {
  auto it = attrs_->tensors.find(name);
  return it == attrs_->tensors.end() ? nullptr : &it->second;
}

std::vector<std::string> Graph::attr_names() const {
  std::vector<std::string> out;
  for (const auto& [name, t] : attrs_->tensors) out.push_back(name);
  return out;
}

void Graph::set_autograd_function(const std::string& name, std::shared_ptr<const AutogradFunctionBody> body) {
  attrs_->autograd_functions[name] = std::move(body);
}

std::shared_ptr<const AutogradFunctionBody> Graph::autograd_function(std::string_view name) const {
  auto it = attrs_->autograd_functions.find(name);
  return it == attrs_->autograd_functions.end() ? nullptr : it->second;
}

std::vector<std::string> Graph::autograd_function_names() const {
  std::vector<std::string> out;
  for (const auto& [name, body] : attrs_->autograd_functions) out.push_back(name);
  return out;
}

}  // namespace tj::graph
