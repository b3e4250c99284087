// Printer golden texts (golden/*.txt; TRACEJIT_UPDATE_GOLDEN=1 rewrites
// them), the text serialization round trip, parse errors, and the Python
// code's exact shape.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include "graph/interpreter.h"
#include "graph/meta_infer.h"
#include "graph/printer.h"
#include "graph/python_codegen.h"
#include "graph/text_format.h"
#include "graph_test_util.h"
#include "op_cases.h"
#include "tracejit_build_config.h"

namespace tj::graph {
namespace {

using testing::op;

// Compares `text` with golden/<name>.txt, or rewrites it when asked.
void expect_golden(const std::string& name, const std::string& text) {
  std::filesystem::path path = std::filesystem::path(TRACEJIT_SOURCE_ROOT) / "tests/unit/graph/golden" / (name + ".txt");
  const char* update = std::getenv("TRACEJIT_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path) << text;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "missing golden file " << path << " (run with TRACEJIT_UPDATE_GOLDEN=1)";
  std::string want((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, want) << "golden " << path << " differs (TRACEJIT_UPDATE_GOLDEN=1 rewrites it)";
}

std::unique_ptr<Graph> case_graph(const std::string& name) {
  for (const auto& c : testing::op_cases())
    if (c.name == name) {
      auto g = testing::build_case(c, c.inputs());
      auto st = infer_meta_all(*g);
      EXPECT_TRUE(st.ok()) << st.error().message;
      return g;
    }
  ADD_FAILURE() << "no case " << name;
  return nullptr;
}

// A graph with every kind of node and constant.
std::unique_ptr<Graph> kitchen_sink() {
  auto g = std::make_unique<Graph>();
  at::Tensor w = at::arange(6, at::kFloat).reshape({2, 3});
  w.set_requires_grad(true);
  g->set_attr("weight", w);
  Node* x = testing::input(*g, "x", at::ones({4, 3}).t());
  x->meta().tags.donated_to_output = 3;
  x->meta().tags.grad_unused = true;
  x->meta().tags.frozen_constant = true;
  Node* wt = g->get_attr("weight");
  Node* mm = g->call(op("aten::mm"), {wt, x});
  mm->meta().loc = SourceLoc{"model.py", 12, "w @ x"};
  mm->meta().tags.grad_enabled = false;
  Node* add = g->call(op("aten::add.Tensor"), {mm, mm}, {{"alpha", 0.5}});
  Node* sum = g->call(op("aten::sum.dim_IntList"), {add, Arg::ints({-1}), true}, {{"dtype", c10::ScalarType::Double}});
  Node* full = g->call(op("aten::full"), {Arg::ints({2}), -1e-07},
                       {{"dtype", c10::ScalarType::Float}, {"layout", c10::Layout::Strided},
                        {"device", c10::Device(c10::kCPU)}, {"pin_memory", false}});
  Node* div = g->call(op("aten::div.Tensor_mode"), {full, full}, {{"rounding_mode", "trunc"}});
  div->meta().loc = SourceLoc{"model.py", 14, "a \"quoted\"\tvalue\n"};
  Node* mx = g->call(op("aten::max.dim"), {add, 0});
  Node* idx = g->call(OpRegistry::instance().getitem(), {mx, 1});
  Node* clone = g->call(op("aten::clone"), {x}, {{"memory_format", c10::MemoryFormat::Contiguous}});
  g->output(Arg::tuple({sum, div, idx, clone, Arg(), Arg::list({1, 2.5, true})}));
  auto st = infer_meta_all(*g);
  EXPECT_TRUE(st.ok()) << st.error().message;
  return g;
}

TEST(Printer, Golden) {
  for (const char* name : {"add_alpha", "max_dim_getitem", "view_then_inplace", "conv2d_bias_pad", "index_second_dim",
                           "native_layer_norm", "permute"})
    expect_golden(std::string("print_") + name, print_graph(*case_graph(name)));
  expect_golden("print_kitchen_sink", print_graph(*kitchen_sink()));
  expect_golden("print_kitchen_sink_verbose", print_graph(*kitchen_sink(), {true}));
  expect_golden("code_kitchen_sink", python_code(*kitchen_sink()));
}

TEST(TextFormat, SerializeParseRoundTrip) {
  auto g = kitchen_sink();
  std::string text = serialize_graph(*g);
  auto parsed = parse_graph(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(serialize_graph(**parsed), text);
  EXPECT_EQ(print_graph(**parsed), print_graph(*g));
  // The parsed graph runs and computes the same.
  at::Tensor x = at::arange(12, at::kFloat).reshape({3, 4});
  auto a = interpret_tensors(*g, {x});
  auto b = interpret_tensors(**parsed, {x});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), b->size());
  for (size_t i = 0; i < a->size(); ++i) EXPECT_TRUE(at::equal((*a)[i], (*b)[i]));
}

TEST(TextFormat, EveryOpCaseRoundTrips) {
  for (const auto& c : testing::op_cases()) {
    auto g = testing::build_case(c, c.inputs());
    ASSERT_TRUE(infer_meta_all(*g).ok()) << c.name;
    auto parsed = parse_graph(serialize_graph(*g));
    ASSERT_TRUE(parsed.ok()) << c.name << ": " << parsed.error().message;
    EXPECT_EQ(serialize_graph(**parsed), serialize_graph(*g)) << c.name;
    auto readable = parse_graph(print_graph(*g));
    ASSERT_TRUE(readable.ok()) << c.name << ": " << readable.error().message;
    EXPECT_EQ(print_graph(**readable), print_graph(*g)) << c.name;
  }
}

// Strides of size-1 and empty dims, which contiguity ignores, survive the
// text: a graph read back (the graph cache's warm start) lays values out
// as the original (f32[3, 1, 4] with strides (4, 1, 1), not (4, 4, 1)).
TEST(TextFormat, StridesOfSize1AndEmptyDimsRoundTrip) {
  Graph g;
  Node* a = testing::input(g, "a", at::zeros({3, 4, 1}).transpose(1, 2));  // (4, 1, 1)
  Node* b = testing::input(g, "b", at::zeros({1, 2}).t());                  // (1, 2)
  Node* c = testing::input(g, "c", at::zeros({0, 3}).t());                  // (1, 3)
  Node* d = testing::input(g, "d", at::zeros({2, 1, 3}));                   // contiguous
  g.output(Arg::tuple({a, b, c, d}));
  const std::string text = serialize_graph(g);
  EXPECT_NE(text.find("f32[3, 1, 4]{stride=[4, 1, 1],"), std::string::npos) << text;
  EXPECT_NE(text.find("f32[2, 1]{stride=[1, 2],"), std::string::npos) << text;
  EXPECT_NE(text.find("f32[3, 0]{stride=[1, 3],"), std::string::npos) << text;
  EXPECT_NE(text.find("%d : f32[2, 1, 3]{storage="), std::string::npos) << text;  // no stride: the parser's
  auto parsed = parse_graph(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  for (const char* name : {"a", "b", "c", "d"})
    EXPECT_EQ((*parsed)->find(name)->meta().tensor()->strides, g.find(name)->meta().tensor()->strides) << name;
  EXPECT_EQ(serialize_graph(**parsed), text);
}

// An attribute (a folded constant) keeps its strides through the text, an
// expanded one (stride 0) and a transposed one among them: ops reading it
// lay their results out by it (fuzz seed 9960407: a folded `expand` read
// back dense from the graph cache gave `clamp` another layout than eager's).
TEST(TextFormat, AttributesKeepTheirStrides) {
  Graph g;
  at::Tensor expanded = at::arange(2, at::kFloat).expand({3, 2});
  at::Tensor transposed = at::arange(6, at::kLong).reshape({2, 3}).t();
  at::Tensor dense = at::arange(4, at::kDouble).reshape({2, 2});
  g.set_attr("expanded", expanded);
  g.set_attr("transposed", transposed);
  g.set_attr("dense", dense);
  Node* a = g.get_attr("expanded");
  g.output(Arg(a));
  const std::string text = serialize_graph(g);
  auto parsed = parse_graph(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  for (const auto& [name, want] : {std::pair<const char*, at::Tensor>{"expanded", expanded}, {"transposed", transposed},
                                   {"dense", dense}}) {
    const at::Tensor* got = (*parsed)->attr(name);
    ASSERT_NE(got, nullptr) << name;
    EXPECT_EQ(got->strides(), want.strides()) << name << "\n" << text;
    EXPECT_TRUE(at::equal(*got, want)) << name;
  }
  EXPECT_EQ(serialize_graph(**parsed), text);
}

// An op returning an undefined tensor in its tuple (multi-head attention
// without weights) is described with `None` in that place; the text parses
// back and the graph runs, its other result read by getitem.
TEST(TextFormat, UndefinedTensorInASequenceResult) {
  auto g = parse_graph(R"(graph():
    %q : f32[1, 3, 4] = placeholder[target=q]
    %w : f32[12, 4] = placeholder[target=w]
    %b : f32[12] = placeholder[target=b]
    %pw : f32[4, 4] = placeholder[target=pw]
    %pb : f32[4] = placeholder[target=pb]
    %mha : ? = call_function[target=aten._native_multi_head_attention.default](args = (%q, %q, %q, 4, 2, %w, %b, %pw, %pb, None, False))
    %out : ? = call_function[target=getitem](args = (%mha, 0))
    return (%out,)
)");
  ASSERT_TRUE(g.ok()) << g.error().message;
  ASSERT_TRUE(infer_meta_all(**g).ok());
  std::string text = print_graph(**g);
  EXPECT_NE(text.find("%mha : (f32[1, 3, 4], None) = "), std::string::npos) << text;
  auto parsed = parse_graph(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(print_graph(**parsed), text);
  std::vector<at::Tensor> in = {at::randn({1, 3, 4}), at::randn({12, 4}), at::randn({12}), at::randn({4, 4}), at::randn({4})};
  auto out = interpret_tensors(**parsed, in);
  ASSERT_TRUE(out.ok()) << out.error().message;
  auto want = at::_native_multi_head_attention(in[0], in[0], in[0], 4, 2, in[1], in[2], in[3], in[4], {}, false);
  EXPECT_FALSE(std::get<1>(want).defined());
  EXPECT_TRUE(at::allclose((*out)[0], std::get<0>(want)));
}

TEST(TextFormat, ErrorsSayWhere) {
  auto unknown = parse_graph("graph():\n    %x : f32[2] = placeholder[target=x]\n"
                             "    %y : ? = call_function[target=aten.frobnicate.default](args = (%x,))\n"
                             "    return %y\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("unknown operator aten::frobnicate"), std::string::npos) << unknown.error().message;
  EXPECT_NE(unknown.error().message.find("line 3"), std::string::npos) << unknown.error().message;
  auto early = parse_graph("graph():\n    %y : ? = call_function[target=aten.sin.default](args = (%x,))\n"
                           "    %x : f32[2] = placeholder[target=x]\n    return %y\n");
  ASSERT_FALSE(early.ok());
  EXPECT_NE(early.error().message.find("'%x' is used before its definition"), std::string::npos);
  EXPECT_FALSE(parse_graph("graph():\n    %x : q32[2] = placeholder[target=x]\n").ok());
  EXPECT_FALSE(parse_graph("nonsense").ok());
}

// Every NodeTags field survives clone and serialize/parse: a field the
// text form or Graph::clone forgot would come back at its default here.
TEST(NodeTags, EveryFieldSurvivesCloneAndText) {
  NodeTags all;
  all.grad_enabled = false;
  all.donated_to_output = 2;
  all.grad_unused = true;
  all.frozen_constant = true;
  all.inplace_step = true;
  ASSERT_FALSE(all.empty());
  Graph g;
  Node* x = testing::input(g, "x", at::ones({3}));
  x->meta().tags = all;
  Node* on = g.call(testing::op("aten::relu"), {x});
  on->meta().tags.grad_enabled = true;
  g.output(Arg::tuple({on}));
  const std::string text = serialize_graph(g);
  EXPECT_NE(text.find(R"(tags("donated_to_output"="2", "frozen_constant"="1", "grad_enabled"="0", "grad_unused"="1", "inplace_step"="1"))"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(tags("grad_enabled"="1"))"), std::string::npos) << text;
  auto clone = g.clone();
  EXPECT_EQ(clone->find("x")->meta().tags, all);
  EXPECT_EQ(clone->find("relu")->meta().tags.grad_enabled, std::optional<bool>(true));
  auto parsed = parse_graph(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ((*parsed)->find("x")->meta().tags, all);
  EXPECT_EQ((*parsed)->find("relu")->meta().tags.grad_enabled, std::optional<bool>(true));
  EXPECT_EQ(serialize_graph(**parsed), text);
  // each field alone, so that one field cannot stand in for another
  for (const auto& [name, value] : tag_texts(all)) {
    NodeTags one;
    ASSERT_TRUE(set_tag(one, name, value)) << name;
    EXPECT_EQ(tag_texts(one), (std::vector<std::pair<std::string, std::string>>{{name, value}}));
  }
  EXPECT_EQ(tag_texts(all).size(), 5u);
}

// A tag the graph does not know, or a value it does not take, is an error,
// never a silently dropped fact.
TEST(NodeTags, UnknownTagsAndValuesAreErrors) {
  NodeTags t;
  EXPECT_FALSE(set_tag(t, "stage", "forward"));
  EXPECT_FALSE(set_tag(t, "grad_enabled", "yes"));
  EXPECT_FALSE(set_tag(t, "donated_to_output", "-1"));
  EXPECT_FALSE(set_tag(t, "donated_to_output", "2x"));
  EXPECT_TRUE(t.empty());
  auto bad = parse_graph("graph():\n    %x : f32[2] = placeholder[target=x] tags(\"stage\"=\"fwd\")\n    return (%x,)\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("unknown tag stage"), std::string::npos) << bad.error().message;
}

TEST(PythonCodegen, Shape) {
  auto g = case_graph("max_dim_getitem");
  EXPECT_EQ(python_code(*g),
            "import torch\n\n\n"
            "def forward(self, x0):\n"
            "    max_1 = torch.ops.aten.max.dim(x0, 1, False)\n"
            "    getitem = max_1[0]\n"
            "    getitem_1 = max_1[1]\n"
            "    return (getitem, getitem_1)\n");
}

}  // namespace
}  // namespace tj::graph
