// Graph text parser (a small recursive-descent reader over one line at a
// time); see text_format.h and printer.h for the format.
#include "graph/text_format.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_strided.h>

#include "graph/autograd_function.h"
#include "graph/op_registry.h"
#include "graph/printer.h"
#include "graph/tensor_text.h"
#include "graph/type_names.h"

namespace tj::graph {

std::string serialize_graph(const Graph& graph) { return print_graph(graph, {true}); }

namespace {

class LineParser {
 public:
  LineParser(std::string_view line, Graph& graph) : s_(line), graph_(graph) {}

  bool at_end() {
    skip_space();
    return pos_ >= s_.size();
  }
  bool peek(std::string_view tok) {
    skip_space();
    return s_.substr(pos_, tok.size()) == tok;
  }
  bool accept(std::string_view tok) {
    if (!peek(tok)) return false;
    pos_ += tok.size();
    return true;
  }
  Status expect(std::string_view tok) {
    if (accept(tok)) return ok_status();
    return error("expected '" + std::string(tok) + "'");
  }
  Error error(const std::string& what) const {
    return Error{"graph text: " + what + " at column " + std::to_string(pos_ + 1) + " of: " + std::string(s_)};
  }

  // An identifier, possibly dotted (`aten.add.Tensor`).
  std::string word(bool dotted = false) {
    skip_space();
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' ||
                                (dotted && (s_[pos_] == '.' || s_[pos_] == ':'))))
      ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  Expected<std::string> string_literal() {
    if (!accept("\"")) return error("expected a string");
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) break;
      char e = s_[pos_++];
      if (e == 'n') out += '\n';
      else if (e == 't') out += '\t';
      else if (e == 'x' && pos_ + 2 <= s_.size()) {
        out += static_cast<char>(std::stoi(std::string(s_.substr(pos_, 2)), nullptr, 16));
        pos_ += 2;
      } else out += e;
    }
    if (!accept("\"")) return error("unterminated string");
    return out;
  }

  Expected<int64_t> integer() {
    skip_space();
    int64_t v = 0;
    auto res = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
    if (res.ec != std::errc()) return error("expected an integer");
    pos_ = res.ptr - s_.data();
    return v;
  }

  Expected<std::vector<int64_t>> int_list() {  // "[1, 2]"
    if (auto st = expect("["); !st) return st.error();
    std::vector<int64_t> out;
    while (!accept("]")) {
      if (!out.empty())
        if (auto st = expect(","); !st) return st.error();
      auto v = integer();
      if (!v) return v.error();
      out.push_back(*v);
    }
    return out;
  }

  Expected<TensorMeta> tensor_meta() {
    std::string dt = word();
    auto dtype = dtype_from_short_name(dt);
    if (!dtype) return error("unknown dtype '" + dt + "'");
    auto sizes = int_list();
    if (!sizes) return sizes.error();
    TensorMeta m = TensorMeta::contiguous(*sizes, *dtype);
    if (!accept("{")) return m;
    while (!accept("}")) {
      if (accept(",")) continue;
      std::string key = word();
      if (key == "grad") {
        m.requires_grad = true;
        continue;
      }
      if (auto st = expect("="); !st) return st.error();
      if (key == "stride") {
        auto strides = int_list();
        if (!strides) return strides.error();
        m.strides = *strides;
      } else if (key == "offset" || key == "storage") {
        auto v = integer();
        if (!v) return v.error();
        (key == "offset" ? m.storage_offset : m.storage_id) = *v;
      } else if (key == "device") {
        skip_space();
        size_t start = pos_;
        while (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != '}') ++pos_;
        try {
          m.device = c10::Device(std::string(s_.substr(start, pos_ - start)));
        } catch (const std::exception&) {
          return error("bad device");
        }
      } else {
        return error("unknown tensor attribute '" + key + "'");
      }
    }
    if (m.strides.size() != m.sizes.size()) return error("strides and sizes differ in rank");
    return m;
  }

  Status fake(NodeMeta& meta) {
    if (accept("?")) return ok_status();
    if (!accept("(")) {
      auto m = tensor_meta();
      if (!m) return m.error();
      meta.set_tensor(*m);
      return ok_status();
    }
    meta.fake_is_sequence = true;
    while (!accept(")")) {
      if (accept(",")) continue;
      if (accept("None")) {
        meta.fake.push_back(TensorMeta::undefined());
        continue;
      }
      auto m = tensor_meta();
      if (!m) return m.error();
      meta.fake.push_back(*m);
    }
    return ok_status();
  }

  Expected<Arg> arg() {
    skip_space();
    if (accept("%")) {
      std::string name = word();
      Node* n = graph_.find(name);
      if (!n) return error("'%" + name + "' is used before its definition");
      return Arg(n);
    }
    if (peek("\"")) {
      auto s = string_literal();
      if (!s) return s.error();
      return Arg(*s);
    }
    if (accept("[") || accept("(")) {
      bool tuple = s_[pos_ - 1] == '(';
      std::vector<Arg> items;
      const char* close = tuple ? ")" : "]";
      while (!accept(close)) {
        if (!items.empty())
          if (auto st = expect(","); !st) return st.error();
        if (accept(close)) break;  // trailing comma
        auto a = arg();
        if (!a) return a;
        items.push_back(std::move(*a));
      }
      return tuple ? Arg::tuple(std::move(items)) : Arg::list(std::move(items));
    }
    if (accept("device(")) {
      auto s = string_literal();
      if (!s) return s.error();
      if (auto st = expect(")"); !st) return st.error();
      try {
        return Arg(c10::Device(*s));
      } catch (const std::exception&) {
        return error("bad device");
      }
    }
    if (accept("-inf")) return Arg(-std::numeric_limits<double>::infinity());
    if (at_end()) return error("expected an argument");
    if (peek("-") || std::isdigit(static_cast<unsigned char>(s_[pos_]))) return number();
    std::string w = word(true);
    if (w == "None") return Arg();
    if (w == "True") return Arg(true);
    if (w == "False") return Arg(false);
    if (w == "inf") return Arg(std::numeric_limits<double>::infinity());
    if (w == "nan") return Arg(std::nan(""));
    if (w.rfind("torch.", 0) == 0) {
      std::string name = w.substr(6);
      if (auto t = dtype_from_python_name(name)) return Arg(*t);
      if (auto l = layout_from_python_name(name)) return Arg(*l);
      if (auto m = memory_format_from_python_name(name)) return Arg(*m);
    }
    return error("cannot read the argument '" + w + "'");
  }

  Expected<Arg> number() {
    skip_space();
    size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    bool is_float = false;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
                                ((s_[pos_] == '-' || s_[pos_] == '+') && (s_[pos_ - 1] == 'e')))) {
      if (s_[pos_] == '.' || s_[pos_] == 'e') is_float = true;
      ++pos_;
    }
    std::string_view text = s_.substr(start, pos_ - start);
    if (is_float) {
      double d = 0;
      auto res = std::from_chars(text.data(), text.data() + text.size(), d);
      if (res.ec != std::errc() || res.ptr != text.data() + text.size()) return error("bad number");
      return Arg(d);
    }
    int64_t i = 0;
    auto res = std::from_chars(text.data(), text.data() + text.size(), i);
    if (res.ec != std::errc() || res.ptr != text.data() + text.size()) return error("bad number");
    return Arg(i);
  }

  // After the node: loc("f.py", 3, "code") and tags("k"="v", ...).
  Status trailers(NodeMeta& meta) {
    while (!at_end()) {
      if (accept("loc(")) {
        SourceLoc loc;
        auto file = string_literal();
        if (!file) return file.error();
        loc.file = *file;
        if (auto st = expect(","); !st) return st;
        auto line = integer();
        if (!line) return line.error();
        loc.line = static_cast<int>(*line);
        if (auto st = expect(","); !st) return st;
        auto code = string_literal();
        if (!code) return code.error();
        loc.code = *code;
        if (auto st = expect(")"); !st) return st;
        meta.loc = loc;
      } else if (accept("tags(")) {
        while (!accept(")")) {
          if (accept(",")) continue;
          auto k = string_literal();
          if (!k) return k.error();
          if (auto st = expect("="); !st) return st;
          auto v = string_literal();
          if (!v) return v.error();
          if (!set_tag(meta.tags, *k, *v)) return error("unknown tag " + *k + "=\"" + *v + "\"");
        }
      } else {
        return error("unexpected text");
      }
    }
    return ok_status();
  }

  // The text up to `stop` (for targets: `aten.add.Tensor`).
  std::string until(char stop) {
    size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != stop) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  std::string_view s_;
  size_t pos_ = 0;
  Graph& graph_;
};

// `dense` (the hex text's values, laid out contiguously) in the strides the
// attribute's meta prints: a constant keeps its layout through the graph
// cache, as eager's ops that read it lay their results out by it (a folded
// `expand`, strides (0, 1), read back dense gave `clamp` another layout:
// fuzz seed 9960407). A stride-0 dim holds one value, written once; strides
// that cannot be laid out so (overlap other than stride 0) keep `dense`.
at::Tensor laid_out_as_printed(const at::Tensor& dense, const std::vector<int64_t>& strides) {
  if (strides.size() != static_cast<size_t>(dense.dim()) || dense.strides() == c10::IntArrayRef(strides)) return dense;
  try {
    at::Tensor out = at::empty_strided(dense.sizes(), strides, dense.options());
    at::Tensor dst = out, src = dense;
    for (int64_t d = 0; d < dense.dim(); ++d)
      if (strides[static_cast<size_t>(d)] == 0 && dense.size(d) > 1) {
        dst = dst.narrow(d, 0, 1);
        src = src.narrow(d, 0, 1);
      }
    if (at::has_internal_overlap(dst) == at::MemOverlap::Yes) return dense;
    dst.copy_(src);
    return out;
  } catch (const c10::Error&) {
    return dense;
  }
}

Status parse_attr(LineParser& p, Graph& g) {
  std::string name = p.word();
  if (auto st = p.expect(":"); !st) return st;
  auto meta = p.tensor_meta();
  if (!meta) return meta.error();
  if (auto st = p.expect("="); !st) return st;
  if (auto st = p.expect("hex"); !st) return st;
  auto hex = p.string_literal();
  if (!hex) return hex.error();
  auto t = tensor_from_hex(*hex, meta->sizes, meta->dtype);
  if (!t) return p.error(t.error().message);
  at::Tensor value = laid_out_as_printed(*t, meta->strides);
  if (meta->requires_grad) value.set_requires_grad(true);
  g.set_attr(name, value);
  return ok_status();
}

Status parse_node(LineParser& p, Graph& g, int64_t& max_storage) {
  std::string name = p.word();
  if (name.empty()) return p.error("expected a node name");
  if (auto st = p.expect(":"); !st) return st;
  NodeMeta meta;
  if (auto st = p.fake(meta); !st) return st;
  if (auto st = p.expect("="); !st) return st;
  std::string kind = p.word();
  if (auto st = p.expect("[target="); !st) return st;
  std::string target = p.until(']');
  if (auto st = p.expect("]"); !st) return st;
  std::vector<Arg> args;
  std::vector<Kwarg> kwargs;
  if (p.accept("(")) {
    if (auto st = p.expect("args ="); !st) return st;
    auto tuple = p.arg();
    if (!tuple) return tuple.error();
    if (!tuple->is_list()) return p.error("args must be a tuple");
    args = tuple->items();
    if (p.accept(",")) {
      if (auto st = p.expect("kwargs = {"); !st) return st;
      while (!p.accept("}")) {
        if (p.accept(",")) continue;
        std::string key = p.word();
        if (auto st = p.expect(":"); !st) return st;
        auto value = p.arg();
        if (!value) return value.error();
        kwargs.emplace_back(key, std::move(*value));
      }
    }
    if (auto st = p.expect(")"); !st) return st;
  }
  if (auto st = p.trailers(meta); !st) return st;

  Node* node = nullptr;
  if (kind == "placeholder") {
    node = g.placeholder(target);
  } else if (kind == "get_attr") {
    node = g.get_attr(target);
  } else if (kind == "call_function") {
    auto op = OpRegistry::instance().get(target);
    if (!op) return p.error(op.error().message);
    node = g.call(**op, std::move(args), std::move(kwargs), name);
  } else {
    return p.error("unknown node kind '" + kind + "'");
  }
  if (!g.rename(node, name)) return p.error("node name '" + name + "' is taken or invalid");
  for (const TensorMeta& m : meta.fake) max_storage = std::max(max_storage, m.storage_id);
  if (!meta.fake.empty() || meta.fake_is_sequence || kind != "get_attr") {
    node->meta().fake = std::move(meta.fake);
    node->meta().fake_is_sequence = meta.fake_is_sequence;
  }
  node->meta().loc = std::move(meta.loc);
  node->meta().tags = std::move(meta.tags);
  return ok_status();
}

// `autograd_function NAME = CLASS(inputs=1, outputs=2, saved=1, grads=[0],
// non_differentiable=[False, False], materialize_grads=True):` (the printer's
// header of a backward body).
Status parse_autograd_function_header(std::string_view line, std::string& name, AutogradFunctionBody& body) {
  auto fail = [&] { return Error{"cannot read the autograd_function header '" + std::string(line) + "'"}; };
  line.remove_prefix(std::string_view("autograd_function ").size());
  size_t eq = line.find(" = "), open = line.find('(');
  if (eq == std::string_view::npos || open == std::string_view::npos || open < eq || line.substr(line.size() - 2) != "):")
    return fail();
  name = std::string(line.substr(0, eq));
  body.class_name = std::string(line.substr(eq + 3, open - eq - 3));
  std::string_view rest = line.substr(open + 1, line.size() - open - 3);
  auto field = [&](std::string_view key) -> std::optional<std::string_view> {
    size_t at = rest.find(std::string(key) + "=");
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view v = rest.substr(at + key.size() + 1);
    size_t end = v.front() == '[' ? v.find(']') + 1 : v.find(',');
    return v.substr(0, end == std::string_view::npos ? v.size() : end);
  };
  auto integer = [&](std::string_view key, int& out) {
    auto v = field(key);
    return v && std::from_chars(v->data(), v->data() + v->size(), out).ec == std::errc();
  };
  auto items = [&](std::string_view key) -> std::optional<std::vector<std::string>> {
    auto v = field(key);
    if (!v || v->size() < 2) return std::nullopt;
    std::vector<std::string> out;
    std::string_view inner = v->substr(1, v->size() - 2);
    while (!inner.empty()) {
      size_t comma = inner.find(", ");
      out.emplace_back(inner.substr(0, comma));
      inner = comma == std::string_view::npos ? std::string_view() : inner.substr(comma + 2);
    }
    return out;
  };
  if (!integer("inputs", body.num_inputs) || !integer("outputs", body.num_outputs) || !integer("saved", body.num_saved))
    return fail();
  auto grads = items("grads");
  auto non_diff = items("non_differentiable");
  auto materialize = field("materialize_grads");
  if (!grads || !non_diff || !materialize) return fail();
  for (const std::string& g : *grads) {
    int k = 0;
    if (std::from_chars(g.data(), g.data() + g.size(), k).ec != std::errc()) return fail();
    body.grad_of_input.push_back(k);
  }
  for (const std::string& b : *non_diff) body.non_differentiable.push_back(b == "True");
  body.materialize_grads = *materialize == "True";
  return ok_status();
}

}  // namespace

Expected<std::unique_ptr<Graph>> parse_graph(std::string_view text) {
  auto g = std::make_unique<Graph>();
  int64_t max_storage = -1;
  bool header = false;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (header && line.substr(0, 18) == "autograd_function ") {
      // A backward body: its indented lines, dedented, are a graph of their own.
      auto body = std::make_shared<AutogradFunctionBody>();
      std::string name;
      if (auto st = parse_autograd_function_header(line, name, *body); !st)
        return Error{st.error().message + " (line " + std::to_string(line_no) + ")"};
      std::string inner = "graph():\n";
      while (!text.empty() && text.substr(0, 4) == "    ") {
        size_t end = text.find('\n');
        inner += std::string(text.substr(4, end == std::string_view::npos ? std::string_view::npos : end - 4)) + "\n";
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        ++line_no;
      }
      auto backward = parse_graph(inner);
      if (!backward) return Error{"backward " + name + ": " + backward.error().message};
      body->backward = std::shared_ptr<const Graph>(std::move(*backward));
      g->set_autograd_function(name, std::move(body));
      continue;
    }
    LineParser p(line, *g);
    if (p.at_end() || p.peek("#")) continue;
    Status st = ok_status();
    if (!header) {
      st = p.expect("graph():");
      header = true;
    } else if (p.accept("%")) {
      st = parse_node(p, *g, max_storage);
    } else if (p.accept("return ")) {
      auto result = p.arg();
      if (!result) return Error{result.error().message + " (line " + std::to_string(line_no) + ")"};
      g->output(std::move(*result));
      if (!p.at_end()) st = p.error("unexpected text after return");
    } else if (p.accept("attr ")) {
      st = parse_attr(p, *g);
    } else {
      st = p.error("cannot read the line");
    }
    if (!st) return Error{st.error().message + " (line " + std::to_string(line_no) + ")"};
  }
  if (!header) return Error{"graph text: empty"};
  g->reserve_storage_ids(max_storage + 1);
  return g;
}

}  // namespace tj::graph
