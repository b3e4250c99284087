// LibTorch's English error texts that tracejit classifies by, read in this
// one place. LibTorch 1.13 reports some conditions only as text (a meta
// kernel that cannot run because its output's shape depends on data; an
// in-place op autograd refuses): each function below names one condition
// and the words it looks for, and tests/unit/graph/test_libtorch_messages.cpp
// makes LibTorch raise each one and pins that the words are still there,
// so a LibTorch whose wording changed fails a test instead of silently
// turning a graph break into an error (or back).
#pragma once

#include <string>

namespace tj::graph {

// A meta kernel of op `qualified` (aten::x.overload) failed with `why`
// because its output's shape depends on tensor data: a nonzero-like op
// itself (nonzero, is_nonzero, count_nonzero), an op that needed
// aten::nonzero inside (indexing with a boolean mask, argwhere), which
// LibTorch reports only as the kernel it could not run, masked_select
// (its size is the mask's count), or one of our shape rules saying
// "(data-dependent)" (one_hot without num_classes).
bool says_data_dependent(const std::string& qualified, const std::string& why);

// Autograd refused an in-place op on a leaf that requires grad.
bool says_leaf_modified_inplace(const std::string& what);

// Autograd refused an in-place op: on a leaf that requires grad, or on a
// view it cannot rebase ("... is being modified inplace").
bool says_autograd_refused_inplace(const std::string& what);

}  // namespace tj::graph
