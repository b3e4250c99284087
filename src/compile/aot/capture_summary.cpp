// The readable form of a capture's metadata (`Capture::summary`, logged
// under aot_graphs and read by tests); see capture.h.
#include <sstream>
#include <string>
#include <vector>

#include "compile/aot/capture.h"

namespace tj::graph::aot {

namespace {

std::string ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

const char* output_kind_name(OutputKind kind) {
  switch (kind) {
    case OutputKind::fresh: return "fresh";
    case OutputKind::input: return "input";
    case OutputKind::view_of_input: return "view_of_input";
    case OutputKind::same_as_output: return "same_as_output";
    case OutputKind::view_of_output: return "view_of_output";
    case OutputKind::view_of_intermediate: return "view_of_intermediate";
  }
  return "?";
}

std::string Capture::summary() const {
  std::ostringstream os;
  os << "inputs:";
  for (size_t u = 0; u < inputs.size(); ++u) {
    const InputInfo& in = inputs[u];
    os << "\n  [" << u << "] position " << in.position;
    if (in.synthetic_base) {
      os << ", synthetic base of positions";
      for (int m : in.members) os << " " << m;
    }
    if (in.requires_grad) os << ", requires_grad";
    if (in.data_mutated) os << ", data mutated";
    if (in.meta_mutated)
      os << ", metadata mutated to " << ints(in.final_geometry.sizes) << " strides " << ints(in.final_geometry.strides)
         << " offset +" << in.final_geometry.offset_delta;
    if (in.version_bumps) os << ", " << in.version_bumps << " version bump(s)";
  }
  for (size_t i = 0; i < unique_of.size(); ++i)
    if (inputs[unique_of[i]].position != static_cast<int>(i) && !inputs[unique_of[i]].synthetic_base)
      os << "\n  position " << i << " duplicates [" << unique_of[i] << "]";
  os << "\noutputs:";
  for (size_t k = 0; k < outputs.size(); ++k) {
    const OutputInfo& o = outputs[k];
    os << "\n  [" << k << "] " << output_kind_name(o.kind);
    if (o.kind != OutputKind::fresh) os << " " << o.source;
    if (o.kind == OutputKind::view_of_input || o.kind == OutputKind::view_of_output ||
        o.kind == OutputKind::view_of_intermediate) {
      os << " as " << ints(o.geometry.sizes) << " strides " << ints(o.geometry.strides) << " offset +"
         << o.geometry.offset_delta;
      if (o.geometry.dtype != c10::ScalarType::Undefined) os << " dtype " << c10::toString(o.geometry.dtype);
      if (o.replay) os << ", replayed by its view ops";
      if (o.replay && o.replay_from >= 0) os << " from output " << o.replay_from;
    }
  }
  for (const auto& [slot, g] : relayouts)
    os << "\n  graph output " << slot << " restrided to " << ints(g.strides);
  os << "\ngraph outputs: " << mutated.size() << " mutated input value(s), " << num_fresh << " fresh, " << num_bases
     << " intermediate base(s)";
  if (joint) os << ", " << grad_inputs.size() << " gradient(s); " << differentiable.size() << " tangent(s)";
  return os.str();
}

}  // namespace tj::graph::aot
