// Comparing and fitting AOT plans across sizes: what the size template
// (aot_template.cpp's aot_generalize) needs to serve every size with one
// plan: whether two captures' plans agree but for their view geometries, and
// those geometries as size forms over the template's classes.
#pragma once
#include <string>
#include <vector>

#include "compile/aot/backward_node.h"
#include "compile/aot/size_programs.h"
#include "graph/size_template.h"
#include "support/expected.h"

namespace tj::jit::aot_rt {

// A plan's view geometries in one order: inputs' final ones, outputs', relayouts'.
template <class P, class G>
std::vector<G*> geometries_of(P& p) {
  std::vector<G*> out;
  for (auto& in : p.inputs) out.push_back(&in.final_geometry);
  for (auto& o : p.outputs) out.push_back(&o.geometry);
  for (auto& r : p.relayouts) out.push_back(&r.second);
  return out;
}

// A geometry whose ints are size forms over a template's classes.
struct GeometryForm {
  std::vector<graph::aot::SizeInt> sizes, strides;
  graph::aot::SizeInt offset_delta;
};

// The geometries of one view across the template's captures as size forms.
Expected<GeometryForm> fit_geometry(const graph::aot::SizeTemplate& t,
                                    const std::vector<const graph::aot::Geometry*>& at_points,
                                    const std::string& what);

// What differs between two plans, other than their graphs and compiled
// functions ("" when nothing): a template serves every size with one plan.
std::string plan_difference(const Plan& a, const Plan& b);

}  // namespace tj::jit::aot_rt
