// Graph printer; see printer.h for the format.
#include "graph/printer.h"

#include "graph/autograd_function.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include <ATen/core/Tensor.h>

#include "graph/op_registry.h"
#include "graph/tensor_text.h"
#include "graph/type_names.h"

namespace tj::graph {

namespace {

std::string format_double(double d, ArgStyle style) {
  if (std::isnan(d)) return style == ArgStyle::python ? "float(\"nan\")" : "nan";
  if (std::isinf(d)) {
    if (style == ArgStyle::python) return d > 0 ? "float(\"inf\")" : "float(\"-inf\")";
    return d > 0 ? "inf" : "-inf";
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d);  // shortest round-trip form
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string join_ints(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

std::string format_device(c10::Device d, ArgStyle style) {
  std::string s = format_string_literal(d.str());
  return style == ArgStyle::python ? "torch.device(" + s + ")" : "device(" + s + ")";
}

}  // namespace

std::string format_string_literal(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      static const char* digits = "0123456789abcdef";
      out += "\\x";
      out += digits[u >> 4];
      out += digits[u & 15];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string format_arg(const Arg& arg, ArgStyle style) {
  const Arg::Value& v = arg.value();
  if (arg.is_node()) return (style == ArgStyle::graph ? "%" : "") + arg.node()->name();
  if (arg.is_none()) return "None";
  if (auto* b = std::get_if<bool>(&v)) return *b ? "True" : "False";
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return format_double(*d, style);
  if (auto* s = std::get_if<std::string>(&v)) return format_string_literal(*s);
  if (auto* t = std::get_if<c10::ScalarType>(&v)) return "torch." + std::string(dtype_python_name(*t));
  if (auto* d = std::get_if<c10::Device>(&v)) return format_device(*d, style);
  if (auto* l = std::get_if<c10::Layout>(&v)) return "torch." + std::string(layout_python_name(*l));
  if (auto* m = std::get_if<c10::MemoryFormat>(&v)) return "torch." + std::string(memory_format_python_name(*m));
  const ArgList& list = arg.as<ArgList>();
  std::string s = list.is_tuple ? "(" : "[";
  for (size_t i = 0; i < list.items.size(); ++i) s += (i ? ", " : "") + format_arg(list.items[i], style);
  if (list.is_tuple && list.items.size() == 1) s += ",";
  return s + (list.is_tuple ? ")" : "]");
}

std::string format_tensor_meta(const TensorMeta& m, bool verbose) {
  if (!m.defined) return "None";
  std::string s = std::string(dtype_short_name(m.dtype)) + "[" + join_ints(m.sizes) + "]";
  std::vector<std::string> extras;
  // Whatever differs from the strides the parser assumes (contiguous ones),
  // size-1 and empty dims included: a graph read back from its text (the
  // graph cache) must lay its values out as the original did.
  if (m.strides != TensorMeta::contiguous(m.sizes, m.dtype).strides)
    extras.push_back("stride=[" + join_ints(m.strides) + "]");
  if (m.storage_offset != 0) extras.push_back("offset=" + std::to_string(m.storage_offset));
  if (m.device != c10::Device(c10::kCPU)) extras.push_back("device=" + m.device.str());
  if (m.requires_grad) extras.push_back("grad");
  if (verbose && m.storage_id >= 0) extras.push_back("storage=" + std::to_string(m.storage_id));
  if (extras.empty()) return s;
  s += "{";
  for (size_t i = 0; i < extras.size(); ++i) s += (i ? ", " : "") + extras[i];
  return s + "}";
}

std::string format_fake(const NodeMeta& meta, bool verbose) {
  if (!meta.fake_is_sequence) return meta.fake.empty() ? "?" : format_tensor_meta(meta.fake[0], verbose);
  std::string s = "(";
  for (size_t i = 0; i < meta.fake.size(); ++i) s += (i ? ", " : "") + format_tensor_meta(meta.fake[i], verbose);
  if (meta.fake.size() == 1) s += ",";
  return s + ")";
}

namespace {

// A backward body after the main `return`: a header line, then the body's
// graph indented one level (its `graph():` line left out).
void print_autograd_function(std::ostream& out, const Graph& graph, const std::string& name,
                             const PrintOptions& options) {
  auto body = graph.autograd_function(name);
  out << "autograd_function " << name << " = " << body->class_name << "(inputs=" << body->num_inputs
      << ", outputs=" << body->num_outputs << ", saved=" << body->num_saved << ", grads=[";
  for (size_t i = 0; i < body->grad_of_input.size(); ++i) out << (i ? ", " : "") << body->grad_of_input[i];
  out << "], non_differentiable=[";
  for (size_t i = 0; i < body->non_differentiable.size(); ++i)
    out << (i ? ", " : "") << (body->non_differentiable[i] ? "True" : "False");
  out << "], materialize_grads=" << (body->materialize_grads ? "True" : "False") << "):\n";
  if (!body->backward) return;
  std::istringstream lines(print_graph(*body->backward, options));
  std::string line;
  std::getline(lines, line);  // graph():
  while (std::getline(lines, line)) out << "    " << line << "\n";
}

}  // namespace

std::string print_graph(const Graph& graph, const PrintOptions& options) {
  std::ostringstream out;
  out << "graph():\n";
  if (options.verbose) {
    for (const std::string& name : graph.attr_names()) {
      const at::Tensor& t = *graph.attr(name);
      TensorMeta m = TensorMeta::contiguous(t.sizes().vec(), t.scalar_type());
      m.strides = t.strides().vec();  // the values are written densely; the parser lays them out so again
      m.requires_grad = t.requires_grad();
      out << "    attr " << name << " : " << format_tensor_meta(m) << " = hex\"" << tensor_to_hex(t) << "\"\n";
    }
  }
  for (const Node* n : graph.nodes()) {
    if (n->kind() == NodeKind::output) {
      out << "    return " << format_arg(n->args().at(0)) << "\n";
      continue;
    }
    out << "    %" << n->name() << " : " << format_fake(n->meta(), options.verbose) << " = "
        << node_kind_name(n->kind()) << "[target=" << n->target() << "]";
    if (!n->args().empty() || !n->kwargs().empty()) {
      out << "(args = " << format_arg(Arg::tuple(n->args()));
      if (!n->kwargs().empty()) {
        out << ", kwargs = {";
        for (size_t i = 0; i < n->kwargs().size(); ++i)
          out << (i ? ", " : "") << n->kwargs()[i].first << ": " << format_arg(n->kwargs()[i].second);
        out << "}";
      }
      out << ")";
    }
    if (options.verbose && n->meta().loc) {
      const SourceLoc& loc = *n->meta().loc;
      out << " loc(" << format_string_literal(loc.file) << ", " << loc.line << ", " << format_string_literal(loc.code)
          << ")";
    }
    if (options.verbose && !n->meta().tags.empty()) {
      out << " tags(";
      bool first = true;
      for (const auto& [k, v] : tag_texts(n->meta().tags)) {
        out << (first ? "" : ", ") << format_string_literal(k) << "=" << format_string_literal(v);
        first = false;
      }
      out << ")";
    }
    out << "\n";
  }
  for (const std::string& name : graph.autograd_function_names()) print_autograd_function(out, graph, name, options);
  return out.str();
}

}  // namespace tj::graph
