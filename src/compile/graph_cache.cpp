// The graph cache; see graph_cache.h. An entry's payload is the key text,
// then the capture's metadata and the graphs as a stream of tokens: an int
// is its decimal digits and a space, a string `<length>:<bytes>`. Reading
// checks every token; anything unexpected makes the whole entry a miss.
#include "compile/graph_cache.h"

#include <torch/csrc/api/include/torch/version.h>

#include <atomic>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <map>
#include <sstream>

#include "graph/printer.h"
#include "graph/text_format.h"
#include "jit/kernel_cache.h"
#include "support/log.h"
#include "tracejit_build_config.h"

namespace at {
class Context;
Context& globalContext();  // defined in libtorch_cpu: its build ID names the LibTorch we run with
}  // namespace at

namespace tj::compile::graph_cache {

namespace {

// TRACEJIT_GRAPH_CACHE read once (0/false/no/off: off), as the Python
// config reads it; set_enabled (tracejit.config.graph_cache) overrides it.
bool enabled_by_environment() {
  const char* v = std::getenv("TRACEJIT_GRAPH_CACHE");
  if (!v) return true;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return !(s == "0" || s == "false" || s == "no" || s == "off" || s.empty());
}
std::atomic<bool> g_enabled{enabled_by_environment()};

constexpr std::string_view kFormat = "graph-entry-5";

// The versions line every key starts with.
const std::string& versions() {
  static const std::string v = [] {
    std::ostringstream os;
    os << kFormat << " tracejit " << TRACEJIT_VERSION << " build " << jit::kernel_cache::build_id() << " torch "
       << TORCH_VERSION << " libtorch "
       << jit::kernel_cache::build_id_of(reinterpret_cast<const void*>(&at::globalContext)) << " llvm "
       << TRACEJIT_LLVM_VERSION;
    return os.str();
  }();
  return v;
}

class Writer {
 public:
  void i(int64_t v) { out_ += std::to_string(v) + ' '; }
  void b(bool v) { i(v ? 1 : 0); }
  void s(std::string_view v) {
    out_ += std::to_string(v.size()) + ':';
    out_ += v;
  }
  void ints(const std::vector<int64_t>& v) {
    i(static_cast<int64_t>(v.size()));
    for (int64_t x : v) i(x);
  }
  void ints(const std::vector<int>& v) {
    i(static_cast<int64_t>(v.size()));
    for (int x : v) i(x);
  }
  void geometry(const graph::aot::Geometry& g) {
    ints(g.sizes);
    ints(g.strides);
    i(g.offset_delta);
    i(static_cast<int64_t>(g.dtype));
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

struct Malformed {
  std::string what;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  int64_t i() {
    size_t end = in_.find(' ', pos_);
    if (end == std::string_view::npos) throw Malformed{"an int"};
    int64_t v = 0;
    auto [p, ec] = std::from_chars(in_.data() + pos_, in_.data() + end, v);
    if (ec != std::errc() || p != in_.data() + end) throw Malformed{"an int"};
    pos_ = end + 1;
    return v;
  }
  int small(int64_t lo, int64_t hi) {
    int64_t v = i();
    if (v < lo || v > hi) throw Malformed{"a value out of range"};
    return static_cast<int>(v);
  }
  bool b() { return small(0, 1) == 1; }
  std::string s() {
    size_t colon = in_.find(':', pos_);
    if (colon == std::string_view::npos) throw Malformed{"a string"};
    size_t n = 0;
    auto [p, ec] = std::from_chars(in_.data() + pos_, in_.data() + colon, n);
    if (ec != std::errc() || p != in_.data() + colon || n > in_.size() - colon - 1) throw Malformed{"a string"};
    pos_ = colon + 1 + n;
    return std::string(in_.substr(colon + 1, n));
  }
  size_t count() { return static_cast<size_t>(small(0, 1 << 24)); }
  std::vector<int64_t> ints64() {
    std::vector<int64_t> v(count());
    for (auto& x : v) x = i();
    return v;
  }
  std::vector<int> ints() {
    std::vector<int> v(count());
    for (auto& x : v) x = small(-(1 << 30), 1 << 30);
    return v;
  }
  graph::aot::Geometry geometry() {
    graph::aot::Geometry g;
    g.sizes = ints64();
    g.strides = ints64();
    g.offset_delta = i();
    g.dtype = static_cast<c10::ScalarType>(
        small(0, static_cast<int64_t>(c10::ScalarType::NumOptions) - 1));
    return g;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

// The graph's text, or nullopt when it does not read back as it prints.
std::optional<std::string> graph_text(const graph::Graph& g) {
  std::string text = graph::serialize_graph(g);
  auto back = graph::parse_graph(text);
  if (!back || graph::serialize_graph(**back) != text) return std::nullopt;
  return text;
}

std::unique_ptr<graph::Graph> read_graph(Reader& r) {
  auto g = graph::parse_graph(r.s());
  if (!g) throw Malformed{"a graph (" + g.error().message + ")"};
  return std::move(*g);
}

// One input's line of the key; `seen` maps tensors and storages to the
// first input that had them (AOT deduplicates the same tensor passed twice
// and makes inputs that share a storage views of one base).
void tensor_key(std::ostringstream& os, const at::Tensor& t, std::map<const void*, int>& seen, int index) {
  if (!t.defined()) {
    os << "undefined\n";
    return;
  }
  os << "same " << seen.emplace(t.unsafeGetTensorImpl(), index).first->second << ' ' << t.sizes() << ' ' << c10::toString(t.scalar_type()) << ' ' << t.device() << ' ' << t.layout() << " keys "
     << t.key_set().raw_repr() << " grad " << t.requires_grad() << " leaf " << t.is_leaf() << " view "
     << t.is_view();
  if (t.layout() == c10::kStrided && t.has_storage()) {
    const void* storage = t.storage().unsafeGetStorageImpl();
    os << " strides " << t.strides() << " offset " << t.storage_offset() << " storage "
       << seen.emplace(storage, index).first->second << " bytes " << t.storage().nbytes();
  }
  os << '\n';
}

}  // namespace

void set_enabled(bool on) { g_enabled = on; }
bool enabled() { return g_enabled.load(); }

std::string area() { return "graphs-" TRACEJIT_VERSION; }

std::string entry_path(const std::string& key) { return jit::kernel_cache::entry_path(area(), key); }

std::string key_of(const graph::Graph& graph, c10::ArrayRef<at::Tensor> inputs, const jit::Backend& backend,
                   const jit::AotOptions& options) {
  std::ostringstream os;
  os << versions() << '\n'
     << "backend " << backend.name << " functional " << backend.functional << " fuses " << backend.fuses_pointwise
     << " grad " << options.grad_enabled << " unused_outputs " << options.undifferentiated_outputs << '\n';
  std::map<const void*, int> seen;
  for (size_t k = 0; k < inputs.size(); ++k) tensor_key(os, inputs[k], seen, static_cast<int>(k));
  os << graph::serialize_graph(graph);
  return os.str();
}

std::optional<std::string> serialize(const std::string& key, const jit::AotCaptured& captured,
                                     const jit::AotPartitioned& graphs) {
  if (!captured.capture || captured.from_template || !captured.graph || !graphs.forward) return std::nullopt;
  const graph::aot::Capture& c = *captured.capture;
  Writer w;
  w.s(key);
  w.ints(c.unique_of);
  w.i(static_cast<int64_t>(c.inputs.size()));
  for (const auto& in : c.inputs) {
    w.i(in.position);
    w.b(in.synthetic_base);
    w.ints(in.members);
    w.b(in.requires_grad);
    w.b(in.data_mutated);
    w.b(in.meta_mutated);
    w.geometry(in.final_geometry);
    w.i(in.version_bumps);
  }
  w.i(static_cast<int64_t>(c.outputs.size()));
  for (const auto& o : c.outputs) {
    w.i(static_cast<int64_t>(o.kind));
    w.i(o.source);
    w.geometry(o.geometry);
    w.b(o.detached);
    w.i(o.creation_meta);
    w.i(o.grad_order);
    w.b(o.replay != nullptr);
    if (o.replay) {
      auto text = graph_text(*o.replay);
      if (!text) return std::nullopt;
      w.s(*text);
      w.i(o.replay_from);
      w.i(o.grad_base);
    }
  }
  w.ints(c.mutated);
  w.i(static_cast<int64_t>(c.relayouts.size()));
  for (const auto& [slot, g] : c.relayouts) {
    w.i(slot);
    w.geometry(g);
  }
  w.i(c.num_fresh);
  w.i(c.num_bases);
  w.ints(c.differentiable);
  w.ints(c.grad_inputs);
  w.i(static_cast<int64_t>(c.grad_defined.size()));
  for (bool d : c.grad_defined) w.b(d);
  w.i(static_cast<int64_t>(c.grad_tangents.size()));
  for (const auto& t : c.grad_tangents) w.ints(t);
  w.ints(c.grad_order);
  w.b(c.joint);
  w.i(c.recorded_ops);
  w.s(graphs.note);
  for (const graph::Graph* g : {captured.graph.get(), graphs.forward.get(), graphs.backward.get()}) {
    w.b(g != nullptr);
    if (!g) continue;
    auto text = graph_text(*g);
    if (!text) return std::nullopt;
    w.s(*text);
  }
  return w.take();
}

bool store(const std::string& key, const jit::AotCaptured& captured, const jit::AotPartitioned& graphs) {
  if (!enabled()) return false;
  auto bytes = serialize(key, captured, graphs);
  if (!bytes) {
    TJ_LOG(perf, "graph cache: not stored (a graph does not read back as it prints)");
    return false;
  }
  return jit::kernel_cache::store_entry(area(), key, *bytes);
}

std::optional<Entry> load(const std::string& key, std::shared_ptr<const graph::Graph> graph,
                          c10::ArrayRef<at::Tensor> inputs, const jit::AotOptions& options) {
  if (!enabled()) return std::nullopt;
  auto bytes = jit::kernel_cache::load_entry(area(), key);
  if (!bytes) return std::nullopt;
  const std::string path = entry_path(key);
  try {
    Reader r(*bytes);
    const std::string stored = r.s();
    if (stored != key) {
      const bool other_version = stored.substr(0, stored.find('\n')) != key.substr(0, key.find('\n'));
      TJ_LOG(perf, "graph cache: ignoring {}: {}", path,
             other_version ? "written by another version of tracejit, LibTorch or LLVM" : "its key differs");
      return std::nullopt;
    }
    graph::aot::Capture c;
    c.unique_of = r.ints();
    c.inputs.resize(r.count());
    for (auto& in : c.inputs) {
      in.position = r.small(0, 1 << 30);
      in.synthetic_base = r.b();
      in.members = r.ints();
      in.requires_grad = r.b();
      in.data_mutated = r.b();
      in.meta_mutated = r.b();
      in.final_geometry = r.geometry();
      in.version_bumps = r.i();
    }
    c.outputs.resize(r.count());
    for (auto& o : c.outputs) {
      o.kind = static_cast<graph::aot::OutputKind>(
          r.small(0, static_cast<int64_t>(graph::aot::OutputKind::view_of_intermediate)));
      o.source = r.small(0, 1 << 30);
      o.geometry = r.geometry();
      o.detached = r.b();
      o.creation_meta = static_cast<uint8_t>(r.small(0, 255));
      o.grad_order = static_cast<int>(r.small(0, 1 << 30));
      if (r.b()) {
        o.replay = std::shared_ptr<const graph::Graph>(read_graph(r));
        o.replay_from = static_cast<int>(r.small(-1, 1 << 30));
        o.grad_base = static_cast<int>(r.small(-1, 1 << 30));
      }
    }
    c.mutated = r.ints();
    c.relayouts.resize(r.count());
    for (auto& [slot, g] : c.relayouts) {
      slot = r.small(0, 1 << 30);
      g = r.geometry();
    }
    c.num_fresh = r.small(0, 1 << 30);
    c.num_bases = r.small(0, 1 << 30);
    c.differentiable = r.ints();
    c.grad_inputs = r.ints();
    c.grad_defined.resize(r.count());
    for (size_t k = 0; k < c.grad_defined.size(); ++k) c.grad_defined[k] = r.b();
    c.grad_tangents.resize(r.count());
    for (auto& t : c.grad_tangents) t = r.ints();
    c.grad_order = r.ints();
    c.joint = r.b();
    c.recorded_ops = r.i();
    Entry e;
    e.graphs.note = r.s();
    std::unique_ptr<graph::Graph> parsed[3];
    for (auto& g : parsed)
      if (r.b()) g = read_graph(r);
    if (!r.done()) throw Malformed{"its end"};
    if (!parsed[0] || !parsed[1]) throw Malformed{"the captured and forward graphs"};
    // what the plan indexes must exist: a stale or hand-made entry fails here, not at run time
    const int unique = static_cast<int>(c.inputs.size());
    if (c.unique_of.size() != inputs.size()) throw Malformed{"one input per placeholder"};
    for (int u : c.unique_of)
      if (u < 0 || u >= unique) throw Malformed{"an input index"};
    for (int u : c.mutated)
      if (u < 0 || u >= unique) throw Malformed{"a mutated input"};
    for (int u : c.grad_inputs)
      if (graph::aot::Capture::is_cut_edge(u) ? graph::aot::Capture::cut_output(u) >= c.outputs.size() : u >= unique)
        throw Malformed{"a gradient's input"};
    if (c.grad_defined.size() != c.grad_inputs.size() || c.grad_tangents.size() != c.grad_inputs.size() ||
        c.grad_order.size() != c.grad_inputs.size())
      throw Malformed{"the gradients' tables"};
    c.graph = std::move(parsed[0]);
    e.captured = jit::aot_captured_from(std::move(graph), std::move(c), inputs, options);
    if (e.captured.joint != (parsed[2] != nullptr)) throw Malformed{"a backward graph for a joint capture"};
    e.graphs.forward = std::shared_ptr<const graph::Graph>(std::move(parsed[1]));
    e.graphs.backward = std::shared_ptr<const graph::Graph>(std::move(parsed[2]));
    jit::aot_take_partition(e.captured, e.graphs);
    return e;
  } catch (const Malformed& m) {
    TJ_LOG(perf, "graph cache: ignoring {}: it does not read as an entry (at {})", path, m.what);
  } catch (const std::exception& ex) {
    TJ_LOG(perf, "graph cache: ignoring {}: {}", path, ex.what());
  }
  return std::nullopt;
}

}  // namespace tj::compile::graph_cache
