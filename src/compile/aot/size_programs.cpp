// One backend program per AOT graph for every size: see aot_programs.h.
#include "compile/aot/size_programs.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <utility>

#include "support/log.h"

namespace tj::jit {

namespace {

constexpr size_t kPoints = 3;
constexpr int kMostTries = 8;  // sizes compiled as points before giving up

int64_t class_size(const graph::aot::SizeTemplate& t, size_t c, const std::vector<graph::TensorMeta>& given) {
  const graph::aot::SizeVar& v = t.classes[c][0];
  return given[static_cast<size_t>(v.placeholder)].sizes[static_cast<size_t>(v.dim)];
}

}  // namespace

std::vector<graph::TensorMeta> placeholder_metas(const graph::Graph& g) {
  std::vector<graph::TensorMeta> out;
  for (const graph::Node* ph : g.placeholders()) out.push_back(ph->meta().tensor() ? *ph->meta().tensor() : graph::TensorMeta{});
  return out;
}

bool AllSizePrograms::Program::serves(const graph::aot::SizeTemplate& t,
                                      const std::vector<graph::TensorMeta>& given) const {
  std::vector<graph::TensorMeta> metas = inputs;
  for (size_t i = 0; i < metas.size(); ++i)
    for (size_t d = 0; d < metas[i].sizes.size(); ++d) metas[i].sizes[d] = graph::aot::eval_size_int(t, sizes[i][d], given);
  return fn.mismatch(metas).empty();
}

std::optional<AllSizePrograms::Served> AllSizePrograms::serving(const graph::aot::SizeTemplate& t,
                                                                const std::vector<graph::TensorMeta>& given) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!forward_ || !forward_->serves(t, given) || (backward_ && !backward_->serves(t, given))) return std::nullopt;
  return Served{forward_->fn.fn, backward_ ? backward_->fn.fn : CompiledFn{}};
}

Expected<AllSizePrograms::Compiled> AllSizePrograms::compile(const graph::aot::SizeTemplate& t,
                                                            const std::vector<graph::TensorMeta>& given,
                                                            const std::shared_ptr<const graph::Graph>& forward,
                                                            const std::shared_ptr<const graph::Graph>& backward,
                                                            const Backend& backend, const std::string& where) {
  // TRACEJIT_ONE_PROGRAM=0: every size lowered on its own (to tell a
  // suspected miscompile of the program for every size apart).
  static const bool enabled = [] {
    const char* v = std::getenv("TRACEJIT_ONE_PROGRAM");
    return !v || std::string(v) != "0";
  }();
  bool as_point = enabled && backend.compile_point && backend.compile_all_sizes;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    as_point = as_point && !decided_;
  }
  Compiled out;
  Point point{given, placeholder_metas(*forward), backward ? placeholder_metas(*backward) : std::vector<graph::TensorMeta>{},
              nullptr, nullptr};
  auto one = [&](const std::shared_ptr<const graph::Graph>& g, const std::vector<graph::TensorMeta>& metas,
                 Backend::SizePoint* kept) {
    return as_point ? backend.compile_point(g, metas, kept) : backend.compile(g, metas);
  };
  auto fw = one(forward, point.forward_inputs, &point.forward);
  if (!fw) return Error{"backend " + backend.name + " (forward): " + fw.error().message, fw.error().kind};
  out.forward = std::move(*fw);
  if (backward) {
    auto bw = one(backward, point.backward_inputs, &point.backward);
    if (!bw) return Error{"backend " + backend.name + " (backward): " + bw.error().message, bw.error().kind};
    out.backward = std::move(*bw);
  }
  if (!as_point || !point.forward || (backward && !point.backward)) return out;
  std::lock_guard<std::mutex> lock(mutex_);
  if (decided_) return out;
  points_.push_back(std::move(point));
  ++tried_;
  if (points_.size() < kPoints) return out;
  // Each class at a size of its own at each point, and no two classes alike.
  std::set<std::vector<int64_t>> classes;
  bool distinct = true;
  for (size_t c = 0; c < t.classes.size(); ++c) {
    std::vector<int64_t> values;
    for (const Point& p : points_) values.push_back(class_size(t, c, p.given));
    std::set<int64_t> unique(values.begin(), values.end());
    distinct = distinct && unique.size() == values.size() && classes.insert(values).second;
  }
  if (distinct) {
    decide(t, backend, backward != nullptr, where);
  } else if (tried_ >= kMostTries) {
    decided_ = true;
    points_.clear();
    TJ_LOG(dynamic, "{}: no program for every size: {} sizes did not give three at which every size class differs; "
           "each size is lowered on its own", where, tried_);
  } else {
    points_.erase(points_.begin());
  }
  return out;
}

Expected<AllSizePrograms::Program> AllSizePrograms::make(const graph::aot::SizeTemplate& t, const Backend& backend,
                                                         bool backward) const {
  std::vector<Backend::SizePoint> points;
  for (const Point& p : points_) points.push_back(backward ? p.backward : p.forward);
  auto fn = backend.compile_all_sizes(points);
  if (!fn) return fn.error();
  Program out{std::move(*fn), backward ? points_[0].backward_inputs : points_[0].forward_inputs, {}};
  // The template's classes at these points, to fit the inputs' sizes over.
  graph::aot::SizeTemplate here = t;
  for (size_t c = 0; c < t.classes.size(); ++c) {
    here.class_values[c].clear();
    for (const Point& p : points_) here.class_values[c].push_back(class_size(t, c, p.given));
  }
  for (size_t i = 0; i < out.inputs.size(); ++i) {
    auto& dims = out.sizes.emplace_back();
    for (size_t d = 0; d < out.inputs[i].sizes.size(); ++d) {
      std::vector<int64_t> values;
      for (const Point& p : points_) {
        const auto& metas = backward ? p.backward_inputs : p.forward_inputs;
        if (metas.size() != out.inputs.size() || metas[i].sizes.size() != out.inputs[i].sizes.size())
          return Error{"the program's inputs change rank between the sizes"};
        values.push_back(metas[i].sizes[d]);
      }
      auto v = graph::aot::fit_size_int(here, values, "input " + std::to_string(i) + " dim " + std::to_string(d));
      if (!v) return v.error();
      dims.push_back(std::move(*v));
    }
  }
  return out;
}

void AllSizePrograms::decide(const graph::aot::SizeTemplate& t, const Backend& backend, bool with_backward,
                             const std::string& where) {
  decided_ = true;
  auto fw = make(t, backend, false);
  Expected<Program> bw = Error{"no backward"};
  if (fw && with_backward) bw = make(t, backend, true);
  if (!fw || (with_backward && !bw)) {
    TJ_LOG(dynamic, "{}: no program for every size ({}): {}; each size is lowered on its own", where,
           !fw ? "forward" : "backward", !fw ? fw.error().message : bw.error().message);
  } else {
    forward_ = std::move(*fw);
    if (with_backward) backward_ = std::move(*bw);
    TJ_LOG(dynamic, "{}: one {} serves every size from now on (made from the programs of {} sizes)", where,
           with_backward ? "forward and one backward program" : "program", points_.size());
  }
  points_.clear();
}

}  // namespace tj::jit
