// Helpers shared by the graph unit tests: op lookup that fails the test on
// error, deterministic input tensors, placeholders described from a tensor.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <gtest/gtest.h>

#include "graph/graph.h"
#include "graph/op_registry.h"

namespace tj::graph::testing {

inline const OpInfo& op(const std::string& name) {
  auto info = OpRegistry::instance().get(name);
  if (!info) throw std::runtime_error(info.error().message);
  return **info;
}

inline TensorMeta describe(const at::Tensor& t, int64_t storage_id) {
  TensorMeta m = TensorMeta::of(t);
  m.storage_id = storage_id;
  return m;
}

// A placeholder whose fake tensor describes `t`.
inline Node* input(Graph& g, const std::string& name, const at::Tensor& t) {
  return g.placeholder(name, describe(t, g.new_storage_id()));
}

}  // namespace tj::graph::testing
