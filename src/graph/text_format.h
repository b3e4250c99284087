// Graph text serialization: `serialize_graph` is the printer's verbose form
// (printer.h); `parse_graph` reads it back — and the readable form too, which
// merely lacks storage ids, locations, tags and attribute data. Operators are
// resolved through the OpRegistry (`aten.add.Tensor`), so a text naming an
// unknown overload is an error, as is a node used before its definition.
// parse(serialize(g)) prints exactly as g.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "graph/graph.h"
#include "support/expected.h"

namespace tj::graph {

std::string serialize_graph(const Graph& graph);
Expected<std::unique_ptr<Graph>> parse_graph(std::string_view text);

}  // namespace tj::graph
