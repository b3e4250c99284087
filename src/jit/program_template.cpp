// One lowered program for every size: see program_template.h.
#include "jit/program_template.h"

#include <utility>

#include "graph/sym_ints.h"

namespace tj::jit {

namespace {

std::string step_name(size_t s) { return "step " + std::to_string(s); }

// Everything of two programs but the ints a template fits.
std::string structure_difference(const Program& a, const Program& b) {
  if (a.kernels.size() != b.kernels.size() || a.steps.size() != b.steps.size()) return "another number of steps";
  for (size_t k = 0; k < a.kernels.size(); ++k)
    if (a.kernels[k].sizes.size() != b.kernels[k].sizes.size() ||
        loop::print_kernel(a.kernels[k], false) != loop::print_kernel(b.kernels[k], false))
      return "kernel " + std::to_string(k) + "'s loop IR";
  for (size_t s = 0; s < a.steps.size(); ++s) {
    const Step& x = a.steps[s];
    const Step& y = b.steps[s];
    const bool same_node = (x.node == nullptr) == (y.node == nullptr) && (!x.node || x.node->name() == y.node->name());
    if (x.kind != y.kind || !same_node || x.slot != y.slot || x.kernel != y.kernel || x.inputs != y.inputs ||
        x.outputs != y.outputs || x.internal != y.internal || x.dim_maps != y.dim_maps ||
        x.fail_at_run_time != y.fail_at_run_time || (x.onednn ? x.onednn->describe() : "") != (y.onednn ? y.onednn->describe() : "") || x.release != y.release ||
        x.donated != y.donated || x.write_back != y.write_back || x.output_metas.size() != y.output_metas.size())
      return step_name(s);
    for (size_t o = 0; o < x.output_metas.size(); ++o) {
      const graph::TensorMeta& m = x.output_metas[o];
      const graph::TensorMeta& n = y.output_metas[o];
      if (m.dtype != n.dtype || m.device != n.device || m.defined != n.defined || m.sizes.size() != n.sizes.size())
        return step_name(s) + "'s output " + std::to_string(o);
    }
  }
  if (a.input_slots != b.input_slots || a.num_slots != b.num_slots || a.slot_of.size() != b.slot_of.size())
    return "the slots";
  for (const auto& [node, slot] : a.slot_of) {
    const graph::Node* other = b.graph->find(node->name());
    auto it = other ? b.slot_of.find(other) : b.slot_of.end();
    if (it == b.slot_of.end() || it->second != slot) return "the slot of " + node->name();
  }
  return "";
}

class Generalizer {
 public:
  explicit Generalizer(const std::vector<const Program*>& points) : points_(points) {}

  Expected<ProgramTemplate> run() {
    if (points_.size() < 3) return Error{"fewer than three size points"};
    for (size_t p = 1; p < points_.size(); ++p)
      if (std::string why = structure_difference(*points_[0], *points_[p]); !why.empty())
        return Error{"the programs differ between the sizes (" + why + ")"};
    std::vector<const graph::Graph*> graphs;
    for (const Program* p : points_) graphs.push_back(p->graph.get());
    auto sizes = graph::aot::generalize_sizes(graphs);
    if (!sizes) return sizes.error();
    out_.sizes = std::move(*sizes);
    if (auto st = adopt_program(); !st) return st.error();
    if (auto st = fit_ints(); !st) return st.error();
    return std::move(out_);
  }

 private:
  // The first point's program, its nodes those of the template graph (a
  // copy of the first point's graph, names kept), the size nodes first.
  Status adopt_program() {
    const Program& a = *points_[0];
    const graph::Graph& g = *out_.sizes.graph;
    Program& p = out_.program;
    p = a;
    p.graph = out_.sizes.graph;
    auto same = [&](const graph::Node* n) -> const graph::Node* { return n ? g.find(n->name()) : nullptr; };
    for (Step& s : p.steps) {
      if (s.node && !(s.node = same(s.node))) return Error{"a step's node is not in the template graph"};
      for (const graph::Node*& m : s.members)
        if (!(m = same(m))) return Error{"a kernel's node is not in the template graph"};
    }
    p.slot_of.clear();
    for (const auto& [node, slot] : a.slot_of) {
      const graph::Node* n = same(node);
      if (!n) return Error{"node " + node->name() + " is not in the template graph"};
      p.slot_of[n] = slot;
    }
    std::vector<Step> size_steps;
    for (const graph::Node* n : g.nodes()) {
      if (!graph::is_sym(*n)) continue;
      Step s;
      s.node = n;
      s.slot = p.num_slots++;
      p.slot_of[n] = s.slot;
      size_steps.push_back(std::move(s));
    }
    p.steps.insert(p.steps.begin(), size_steps.begin(), size_steps.end());
    shift_ = static_cast<int>(size_steps.size());
    return ok_status();
  }

  Status fit(ProgramInt where, const std::vector<int64_t>& values, const std::string& what) {
    auto v = graph::aot::fit_size_int(out_.sizes, values, what);
    if (!v) return v.error();
    if (!v->form) return ok_status();
    where.value = std::move(*v);
    out_.ints.push_back(std::move(where));
    return ok_status();
  }

  Status fit_ints() {
    using Where = ProgramInt::Where;
    const Program& a = *points_[0];
    for (size_t k = 0; k < a.kernels.size(); ++k)
      for (size_t d = 0; d < a.kernels[k].sizes.size(); ++d) {
        std::vector<int64_t> values;
        for (const Program* p : points_) values.push_back(p->kernels[k].sizes[d]);
        ProgramInt at{Where::kernel_size, static_cast<int>(k), 0, static_cast<int>(d), {}};
        if (auto st = fit(at, values, "kernel " + std::to_string(k) + "'s size " + std::to_string(d)); !st) return st;
      }
    for (size_t s = 0; s < a.steps.size(); ++s)
      for (size_t o = 0; o < a.steps[s].output_metas.size(); ++o) {
        const std::string what = step_name(s) + "'s output " + std::to_string(o);
        const int step = static_cast<int>(s) + shift_;
        auto meta_of = [&](const Program* p) -> const graph::TensorMeta& { return p->steps[s].output_metas[o]; };
        for (size_t d = 0; d < meta_of(&a).sizes.size(); ++d) {
          std::vector<int64_t> sizes, strides;
          for (const Program* p : points_) {
            sizes.push_back(meta_of(p).sizes[d]);
            strides.push_back(meta_of(p).strides[d]);
          }
          const int dim = static_cast<int>(d);
          if (auto st = fit({Where::buffer_size, step, static_cast<int>(o), dim, {}}, sizes, what + " size"); !st)
            return st;
          if (auto st = fit({Where::buffer_stride, step, static_cast<int>(o), dim, {}}, strides, what + " stride"); !st)
            return st;
        }
        std::vector<int64_t> offsets;
        for (const Program* p : points_) offsets.push_back(meta_of(p).storage_offset);
        if (auto st = fit({Where::buffer_offset, step, static_cast<int>(o), 0, {}}, offsets, what + " offset"); !st)
          return st;
      }
    return ok_status();
  }

  const std::vector<const Program*>& points_;
  ProgramTemplate out_;
  int shift_ = 0;  // the size steps put before the program's own
};

}  // namespace

Expected<ProgramTemplate> generalize_program(const std::vector<const Program*>& points) {
  return Generalizer(points).run();
}

ProgramSizes program_sizes(const ProgramTemplate& t, const std::vector<graph::TensorMeta>& inputs) {
  ProgramSizes out;
  for (const loop::Kernel& k : t.program.kernels) out.kernel_sizes.push_back(k.sizes);
  for (const Step& s : t.program.steps) out.output_metas.push_back(s.output_metas);
  using Where = ProgramInt::Where;
  for (const ProgramInt& i : t.ints) {
    const int64_t v = graph::aot::eval_size_int(t.sizes, i.value, inputs);
    if (i.where == Where::kernel_size) {
      out.kernel_sizes[static_cast<size_t>(i.index)][static_cast<size_t>(i.dim)] = v;
      continue;
    }
    graph::TensorMeta& m = out.output_metas[static_cast<size_t>(i.index)][static_cast<size_t>(i.output)];
    if (i.where == Where::buffer_size) m.sizes[static_cast<size_t>(i.dim)] = v;
    if (i.where == Where::buffer_stride) m.strides[static_cast<size_t>(i.dim)] = v;
    if (i.where == Where::buffer_offset) m.storage_offset = v;
  }
  return out;
}

}  // namespace tj::jit
