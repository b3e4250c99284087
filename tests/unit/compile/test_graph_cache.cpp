// The graph cache (compile/graph_cache.h) and the disk store under it
// (jit/kernel_cache.h): a compile's AOT result read back gives the same
// graphs and values with no capture; entries that are corrupt (the
// checksum; a change that still parses too), truncated,
// of another version or key, or that do not parse are ignored, never
// trusted; concurrent writers (processes) never leave a torn entry; past
// the size cap the least recently used entries go; the key tells apart
// what changes AOT's result (requires_grad, aliasing between inputs,
// dtypes, grad mode, the backend).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "aot_test_util.h"
#include "compile/graph_cache.h"
#include "compile/pipeline.h"
#include "graph/printer.h"
#include "jit/kernel_cache.h"

namespace tj::compile {
namespace {

namespace fs = std::filesystem;
using jit::testing::graph_of;

// A fresh cache directory per test, the store pointed at it; restored after.
class GraphCache : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tj_graph_cache_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    jit::kernel_cache::set_base_directory(dir_);
    jit::kernel_cache::set_size_limit(1LL << 30);
    graph_cache::set_enabled(true);
  }
  void TearDown() override {
    jit::kernel_cache::set_base_directory(std::nullopt);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::vector<fs::path> entries() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_))
      if (e.is_regular_file()) out.push_back(e.path());
    return out;
  }
  std::string dir_;
};

// y = tanh(x @ w)^2: a joint graph.
std::shared_ptr<const graph::Graph> mlp() {
  return graph_of(R"(
    in x w
    m = aten.mm.default(%x, %w)
    t = aten.tanh.default(%m)
    y = aten.mul.Tensor(%t, %t)
    ret (%y,))");
}

std::shared_ptr<const graph::Graph> writes_input() {
  return graph_of(R"(
    in x
    a = aten.add_.Tensor(%x, 1)
    s = aten.sin.default(%a)
    ret (%s,))");
}

struct Compile {
  Result result;
  std::vector<std::string> handed;  // graphs the backend got, printed
};

Compile compile(std::shared_ptr<const graph::Graph> g, std::vector<at::Tensor> inputs, bool grad) {
  auto out = std::make_shared<Compile>();
  jit::Backend b = jit::testing::interpreter_backend();
  b.compile = [out, inner = b.compile](std::shared_ptr<const graph::Graph> g, const std::vector<graph::TensorMeta>& in) {
    out->handed.push_back(graph::print_graph(*g));
    return inner(g, in);
  };
  Request r;
  r.graph = std::move(g);
  r.example_inputs = std::move(inputs);
  r.backend = &b;
  r.where = "test";
  r.grad_enabled = grad;
  at::AutoGradMode mode(grad);
  out->result = compile_graph(r);
  return *out;
}

std::vector<at::Tensor> mlp_inputs() {
  at::manual_seed(0);
  return {at::randn({4, 3}), at::randn({3, 5}).requires_grad_(true)};
}

TEST_F(GraphCache, SecondCompileTakesAotsResultFromDiskAndCapturesNothing) {
  Compile first = compile(mlp(), mlp_inputs(), true);
  ASSERT_TRUE(first.result.compiled) << first.result.failure.message;
  EXPECT_TRUE(first.result.captured);
  EXPECT_FALSE(first.result.from_graph_cache);
  ASSERT_EQ(first.handed.size(), 2u);  // forward and backward
  ASSERT_EQ(entries().size(), 1u);
  EXPECT_TRUE(entries()[0].string().find("/graphs-") != std::string::npos) << entries()[0];

  Compile second = compile(mlp(), mlp_inputs(), true);
  ASSERT_TRUE(second.result.compiled) << second.result.failure.message;
  EXPECT_FALSE(second.result.captured);
  EXPECT_TRUE(second.result.from_graph_cache);
  EXPECT_EQ(second.handed, first.handed);
  EXPECT_EQ(second.result.compiled->aot_summary, first.result.compiled->aot_summary);
  EXPECT_TRUE(second.result.compiled->aot_point);  // a dynamic entry's size template can start from it

  // values and gradients as eager's
  std::vector<at::Tensor> in = mlp_inputs(), eager_in = mlp_inputs();
  at::Tensor y = second.result.compiled->fn(in)[0];
  y.sum().backward();
  at::Tensor want = eager_in[0].mm(eager_in[1]).tanh().pow(2);
  want.sum().backward();
  EXPECT_TRUE(at::allclose(y, want));
  EXPECT_TRUE(at::allclose(in[1].grad(), eager_in[1].grad()));
}

TEST_F(GraphCache, AnInputWrittenInPlaceIsWrittenFromACachedPlanToo) {
  auto inputs = [] { return std::vector<at::Tensor>{at::arange(6, at::kFloat)}; };
  Compile first = compile(writes_input(), inputs(), false);
  ASSERT_TRUE(first.result.compiled);
  Compile second = compile(writes_input(), inputs(), false);
  ASSERT_TRUE(second.result.compiled);
  ASSERT_TRUE(second.result.from_graph_cache);
  std::vector<at::Tensor> in = inputs(), in_first = inputs();
  at::Tensor out = second.result.compiled->fn(in)[0];
  at::Tensor out_first = first.result.compiled->fn(in_first)[0];
  EXPECT_TRUE(at::equal(in[0], at::arange(6, at::kFloat) + 1));
  EXPECT_EQ(in[0]._version(), in_first[0]._version());  // the captured plan's bumps
  EXPECT_TRUE(at::allclose(out, (at::arange(6, at::kFloat) + 1).sin()));
  EXPECT_TRUE(at::equal(out, out_first));
}

// Rewrites the one entry with `edit` applied to its bytes.
void edit_entry(const fs::path& p, const std::function<void(std::string&)>& edit) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream b;
  b << in.rdbuf();
  std::string bytes = b.str();
  in.close();
  edit(bytes);
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

TEST_F(GraphCache, CorruptEntryIsIgnoredAndWrittenAgain) {
  ASSERT_TRUE(compile(mlp(), mlp_inputs(), true).result.compiled);
  ASSERT_EQ(entries().size(), 1u);
  edit_entry(entries()[0], [](std::string& b) { b[b.size() / 2] ^= 0x20; });
  Compile again = compile(mlp(), mlp_inputs(), true);
  ASSERT_TRUE(again.result.compiled);
  EXPECT_TRUE(again.result.captured);
  EXPECT_FALSE(again.result.from_graph_cache);
  Compile third = compile(mlp(), mlp_inputs(), true);  // the capture stored it again
  EXPECT_TRUE(third.result.from_graph_cache);
}

TEST_F(GraphCache, TruncatedEntryIsIgnored) {
  ASSERT_TRUE(compile(mlp(), mlp_inputs(), true).result.compiled);
  for (size_t keep : {size_t{0}, size_t{10}, size_t{40}, size_t{0}}) {
    ASSERT_EQ(entries().size(), 1u);
    edit_entry(entries()[0], [keep](std::string& b) { b.resize(keep ? keep : b.size() - 7); });
    Compile again = compile(mlp(), mlp_inputs(), true);
    ASSERT_TRUE(again.result.compiled);
    EXPECT_TRUE(again.result.captured) << "kept " << keep;
    EXPECT_FALSE(again.result.from_graph_cache);
  }
}

// AOT's result for mlp() and its key, made directly.
struct Made {
  std::string key;
  jit::AotCaptured captured;
  jit::AotPartitioned graphs;
  std::shared_ptr<const graph::Graph> graph;
  std::vector<at::Tensor> inputs;
};
Made made() {
  Made m;
  m.graph = mlp();
  m.inputs = mlp_inputs();
  at::AutoGradMode mode(true);
  jit::AotOptions options;
  m.key = graph_cache::key_of(*m.graph, m.inputs, jit::testing::interpreter_backend(), options);
  m.captured = *jit::aot_capture(m.graph, m.inputs, options);
  m.graphs = *jit::aot_partition(m.captured, jit::testing::interpreter_backend());
  return m;
}

TEST_F(GraphCache, EntryOfAnotherVersionOrKeyIsIgnored) {
  Made m = made();
  ASSERT_TRUE(graph_cache::store(m.key, m.captured, m.graphs));
  ASSERT_TRUE(graph_cache::load(m.key, m.graph, m.inputs, jit::AotOptions{}));
  // the same file, but written by another version: its first key line differs
  std::string other = m.key;
  other.replace(0, other.find(" tracejit "), "graph-entry-0");
  auto bytes = graph_cache::serialize(other, m.captured, m.graphs);
  ASSERT_TRUE(bytes);
  ASSERT_TRUE(jit::kernel_cache::store_entry(graph_cache::area(), m.key, *bytes));
  EXPECT_FALSE(graph_cache::load(m.key, m.graph, m.inputs, jit::AotOptions{}));
  // ... or another key (a collision of the file names' hash)
  bytes = graph_cache::serialize(m.key + "x", m.captured, m.graphs);
  ASSERT_TRUE(jit::kernel_cache::store_entry(graph_cache::area(), m.key, *bytes));
  EXPECT_FALSE(graph_cache::load(m.key, m.graph, m.inputs, jit::AotOptions{}));
}

// A change that still reads as an entry (here one letter of the partition's
// note) is refused by the checksum alone: the same bytes stored with a
// checksum of their own load.
TEST_F(GraphCache, ChangeThatStillParsesIsCaughtByTheChecksum) {
  Made m = made();
  m.graphs.note = "partition note A";
  ASSERT_TRUE(graph_cache::store(m.key, m.captured, m.graphs));
  ASSERT_TRUE(graph_cache::load(m.key, m.graph, m.inputs, jit::AotOptions{}));
  ASSERT_EQ(entries().size(), 1u);
  bool found = false;
  edit_entry(entries()[0], [&found](std::string& b) {
    size_t at = b.find("partition note A");
    found = at != std::string::npos;
    if (found) b[at + 15] = 'B';
  });
  ASSERT_TRUE(found);
  EXPECT_FALSE(graph_cache::load(m.key, m.graph, m.inputs, jit::AotOptions{}));
  m.graphs.note = "partition note B";
  auto bytes = graph_cache::serialize(m.key, m.captured, m.graphs);
  ASSERT_TRUE(bytes);
  ASSERT_TRUE(jit::kernel_cache::store_entry(graph_cache::area(), m.key, *bytes));
  auto e = graph_cache::load(m.key, m.graph, m.inputs, jit::AotOptions{});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->graphs.note, "partition note B");
}

// Node tags (graph::NodeTags: grad mode, donation, grad_unused, frozen)
// come back from the cache as stored: a tag the entry dropped would change
// how the graphs run (under which grad mode, into which input's storage).
TEST_F(GraphCache, NodeTagsComeBackAsStored) {
  Made m = made();
  auto forward = m.graphs.forward->clone();
  std::vector<graph::Node*> phs = forward->placeholders();
  ASSERT_GE(phs.size(), 2u);
  phs[0]->meta().tags.donated_to_output = 0;
  phs[0]->meta().tags.grad_unused = true;
  phs[1]->meta().tags.frozen_constant = true;
  graph::Node* call = nullptr;
  for (graph::Node* n : forward->nodes())
    if (n->kind() == graph::NodeKind::call_function) call = n;
  ASSERT_NE(call, nullptr);
  call->meta().tags.grad_enabled = false;
  m.graphs.forward = std::move(forward);
  ASSERT_TRUE(graph_cache::store(m.key, m.captured, m.graphs));
  auto back = graph_cache::load(m.key, m.graph, m.inputs, jit::AotOptions{});
  ASSERT_TRUE(back);
  ASSERT_TRUE(back->graphs.forward);
  for (const graph::Node* n : m.graphs.forward->nodes()) {
    const graph::Node* read = back->graphs.forward->find(n->name());
    ASSERT_NE(read, nullptr) << n->name();
    EXPECT_EQ(read->meta().tags, n->meta().tags) << n->name();
  }
  EXPECT_EQ(back->graphs.forward->find(call->name())->meta().tags.grad_enabled, std::optional<bool>(false));
}

TEST_F(GraphCache, EntryThatDoesNotParseIsIgnored) {
  Made m = made();
  auto good = *graph_cache::serialize(m.key, m.captured, m.graphs);
  // a valid checksum over bytes that are no entry: cut short, an index out
  // of range, garbage after the end
  const std::string key_part = std::to_string(m.key.size()) + ":" + m.key;
  for (const std::string& bad : {good.substr(0, good.size() / 2), key_part + "1 99 ", key_part + "zz", good + "7 "}) {
    ASSERT_TRUE(jit::kernel_cache::store_entry(graph_cache::area(), m.key, bad));
    EXPECT_FALSE(graph_cache::load(m.key, m.graph, m.inputs, jit::AotOptions{})) << bad.substr(key_part.size(), 40);
  }
  ASSERT_TRUE(jit::kernel_cache::store_entry(graph_cache::area(), m.key, good));
  EXPECT_TRUE(graph_cache::load(m.key, m.graph, m.inputs, jit::AotOptions{}));
}

TEST_F(GraphCache, ConcurrentWritersNeverLeaveATornEntry) {
  Made m = made();
  auto good = *graph_cache::serialize(m.key, m.captured, m.graphs);
  std::string big = good;  // entries of two sizes: a torn write would mix them
  std::vector<pid_t> children;
  for (int c = 0; c < 3; ++c) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int k = 0; k < 60; ++k)
        jit::kernel_cache::store_entry(graph_cache::area(), m.key, (k + c) % 2 ? good : big + std::string(4096, ' '));
      ::_exit(0);
    }
    children.push_back(pid);
  }
  int seen = 0, torn = 0;
  for (int k = 0; k < 300; ++k) {
    auto bytes = jit::kernel_cache::load_entry(graph_cache::area(), m.key);
    if (!bytes) {
      torn += fs::exists(graph_cache::entry_path(m.key));  // present but refused
      continue;
    }
    ++seen;
    EXPECT_TRUE(*bytes == good || *bytes == big + std::string(4096, ' '));
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(torn, 0);
  EXPECT_GT(seen, 0);
  for (const auto& p : entries()) EXPECT_EQ(p.filename().string().find(".tmp."), std::string::npos) << p;
  ASSERT_TRUE(jit::kernel_cache::store_entry(graph_cache::area(), m.key, good));
  EXPECT_TRUE(graph_cache::load(m.key, m.graph, m.inputs, jit::AotOptions{}));
}

TEST_F(GraphCache, PastTheCapTheLeastRecentlyUsedEntriesGo) {
  const std::string area = "test-area";
  const std::string payload(1000, 'p');
  jit::kernel_cache::set_size_limit(5500);  // room for five entries of ~1 KB
  auto past = std::chrono::seconds(100);
  for (int k = 0; k < 5; ++k) {
    ASSERT_TRUE(jit::kernel_cache::store_entry(area, "k" + std::to_string(k), payload));
    // oldest first: k0 100 s ago, k4 20 s ago
    fs::last_write_time(jit::kernel_cache::entry_path(area, "k" + std::to_string(k)),
                        fs::file_time_type::clock::now() - past + std::chrono::seconds(20 * k));
  }
  ASSERT_TRUE(jit::kernel_cache::load_entry(area, "k0"));  // used now: the most recent
  ASSERT_TRUE(jit::kernel_cache::store_entry(area, "k5", payload));  // over the cap
  EXPECT_TRUE(fs::exists(jit::kernel_cache::entry_path(area, "k0")));
  EXPECT_TRUE(fs::exists(jit::kernel_cache::entry_path(area, "k5")));
  EXPECT_FALSE(fs::exists(jit::kernel_cache::entry_path(area, "k1")));
  EXPECT_FALSE(fs::exists(jit::kernel_cache::entry_path(area, "k2")));
  EXPECT_TRUE(fs::exists(jit::kernel_cache::entry_path(area, "k4")));
}

TEST_F(GraphCache, KeyTellsApartWhatChangesAotsResult) {
  auto g = mlp();
  jit::Backend b = jit::testing::interpreter_backend();
  auto key = [&](std::vector<at::Tensor> in, bool grad = true, const jit::Backend* backend = nullptr) {
    jit::AotOptions o;
    o.grad_enabled = grad;
    return graph_cache::key_of(*g, in, backend ? *backend : b, o);
  };
  at::Tensor x = at::randn({4, 3}), w = at::randn({3, 5});
  const std::string base = key({x, w});
  EXPECT_EQ(key({at::randn({4, 3}), at::randn({3, 5})}), base);  // values do not matter
  EXPECT_NE(key({x, w.clone().requires_grad_(true)}), base);
  EXPECT_NE(key({x, w.to(at::kDouble)}), base);
  EXPECT_NE(key({x, w}, false), base);
  EXPECT_NE(key({x, w.t().contiguous().t()}), base);  // strides
  at::Tensor storage = at::randn({27});
  EXPECT_NE(key({storage.narrow(0, 0, 12).view({4, 3}), storage.narrow(0, 12, 15).view({3, 5})}),
            key({at::randn({27}).narrow(0, 0, 12).view({4, 3}), storage.narrow(0, 12, 15).view({3, 5})}));
  jit::Backend fusing = jit::testing::interpreter_backend(/*fuses_pointwise=*/true);
  EXPECT_NE(key({x, w}, true, &fusing), base);
}

TEST_F(GraphCache, TurnedOffItNeitherReadsNorWrites) {
  graph_cache::set_enabled(false);
  ASSERT_TRUE(compile(mlp(), mlp_inputs(), true).result.compiled);
  EXPECT_TRUE(entries().empty());
  graph_cache::set_enabled(true);
  ASSERT_TRUE(compile(mlp(), mlp_inputs(), true).result.compiled);
  graph_cache::set_enabled(false);
  Compile off = compile(mlp(), mlp_inputs(), true);
  EXPECT_TRUE(off.result.captured);
  EXPECT_FALSE(off.result.from_graph_cache);
  graph_cache::set_enabled(true);
  jit::kernel_cache::set_base_directory(std::string());  // cache_dir = "": no disk cache at all
  EXPECT_FALSE(compile(mlp(), mlp_inputs(), true).result.from_graph_cache);
}

}  // namespace
}  // namespace tj::compile
