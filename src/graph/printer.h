// The printer, in FX's readable style: one node per line,
//
//   graph():
//       %x : f32[4, 8] = placeholder[target=x]
//       %add : f32[4, 8] = call_function[target=aten.add.Tensor](args = (%x, %x), kwargs = {alpha: 2})
//       return (%add,)
//
// with the fake tensor after the name (`?` when unknown, `(f32[4], i64[4])`
// for a tuple, `{stride=[1, 4], offset=2, device=cuda:0, grad}` only where
// it differs from a fresh contiguous CPU tensor). The output is
// deterministic: it serves as golden text.
//
// The verbose form adds what the readable one leaves out — storage ids,
// source locations (`loc("f.py", 3, "x + y")`), tags (`tags("grad_enabled"="0")`: NodeTags) and
// the attribute tensors with their data (`attr w : f32[8] = hex"..."`) —
// and is the text serialization that parse_graph() (text_format.h) reads.
#pragma once

#include <string>
#include <string_view>

#include "graph/graph.h"

namespace tj::graph {

struct PrintOptions {
  bool verbose = false;
};

std::string print_graph(const Graph& graph, const PrintOptions& options = {});

// How constants are spelled: in graph text (`%x`, `inf`, `device("cpu")`)
// or as Python source (`x`, `float("inf")`, `torch.device("cpu")`).
enum class ArgStyle { graph, python };
std::string format_arg(const Arg& arg, ArgStyle style = ArgStyle::graph);
std::string format_tensor_meta(const TensorMeta& meta, bool verbose = false);
std::string format_fake(const NodeMeta& meta, bool verbose = false);
std::string format_string_literal(std::string_view s);  // "..." with escapes valid in Python too

}  // namespace tj::graph
