// LibTorch's English error texts that tracejit classifies by, read in this
// one place. LibTorch 1.13 reports some conditions only as text (an in-place
// op autograd refuses): each function below names one condition and the
// words it looks for, and tests/unit/graph/test_libtorch_messages.cpp makes
// LibTorch raise each one and pins that the words are still there, so a
// LibTorch whose wording changed fails a test instead of silently turning a
// graph break into an error (or back). Which ops' results depend on tensor
// data is no such text: a table of ops (data_dependent_ops.h).
#pragma once

#include <string>

namespace tj::graph {

// Autograd refused an in-place op on a leaf that requires grad.
bool says_leaf_modified_inplace(const std::string& what);

// Autograd refused an in-place op: on a leaf that requires grad, or on a
// view it cannot rebase ("... is being modified inplace").
bool says_autograd_refused_inplace(const std::string& what);

// Autograd has no derivative for an op (its graph node is NotImplemented,
// which throws a std::runtime_error "derivative for aten::floor_divide is
// not implemented" when the backward reaches it).
bool says_derivative_not_implemented(const std::string& what);

// A view or reshape was asked for sizes whose product is not the tensor's
// number of elements (ATen's infer_size throws a plain std::runtime_error
// "shape '[-1, 7]' is invalid for input of size 2", which eager raises as
// RuntimeError).
bool says_invalid_shape(const std::string& what);

}  // namespace tj::graph
