// The words of LibTorch's error texts that tracejit classifies by
// (graph/libtorch_messages.h), pinned: each test makes LibTorch raise the
// condition for real and checks that the named function still recognizes
// the text, and that an unrelated failure is not taken for it.
#include <functional>
#include <string>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include "graph/libtorch_messages.h"

namespace tj::graph {
namespace {

// The text of what `f` throws ("" when it does not).
std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(LibTorchMessages, InPlaceOnALeafThatRequiresGrad) {
  c10::AutoGradMode grad(true);
  const std::string leaf = what_of([] { at::zeros({2}).requires_grad_(true).add_(1); });
  ASSERT_FALSE(leaf.empty()) << "autograd let an in-place op write a leaf that requires grad";
  EXPECT_TRUE(says_leaf_modified_inplace(leaf)) << leaf;
  EXPECT_TRUE(says_autograd_refused_inplace(leaf)) << leaf;
}

TEST(LibTorchMessages, InPlaceOnAViewAutogradCannotRebase) {
  c10::AutoGradMode grad(true);
  const std::string unbound = what_of([] {
    at::Tensor b = at::zeros({4}).requires_grad_(true).clone();
    b.unbind(0)[0].mul_(2);
  });
  ASSERT_FALSE(unbound.empty()) << "autograd let an output of unbind be written in place";
  EXPECT_TRUE(says_autograd_refused_inplace(unbound)) << unbound;
  EXPECT_FALSE(says_leaf_modified_inplace(unbound)) << unbound;
  const std::string no_grad_view = what_of([] {
    at::Tensor b = at::zeros({4}).requires_grad_(true).clone();
    at::Tensor v;
    {
      c10::NoGradGuard no_grad;
      v = b.view({2, 2});
    }
    v.mul_(2);
  });
  ASSERT_FALSE(no_grad_view.empty());
  EXPECT_TRUE(says_autograd_refused_inplace(no_grad_view)) << no_grad_view;
  // an ordinary in-place error is no refusal of autograd's
  const std::string shape = what_of([] { at::zeros({2}).add_(at::zeros({3})); });
  ASSERT_FALSE(shape.empty());
  EXPECT_FALSE(says_autograd_refused_inplace(shape)) << shape;
}

TEST(LibTorchMessages, AnOpWithoutADerivative) {
  c10::AutoGradMode grad(true);
  const std::string missing = what_of([] {
    at::Tensor x = at::ones({3}).requires_grad_(true);
    at::floor_divide(at::full({3}, 5.0), x).sum().backward();
  });
  ASSERT_FALSE(missing.empty()) << "autograd found a derivative for floor_divide";
  EXPECT_TRUE(says_derivative_not_implemented(missing)) << missing;
  const std::string shape = what_of([] { at::zeros({2}).add_(at::zeros({3})); });
  EXPECT_FALSE(says_derivative_not_implemented(shape)) << shape;
}

TEST(LibTorchMessages, ASizeThatDoesNotHoldTheElements) {
  for (auto f : {+[] { at::zeros({2, 1}).reshape({-1, 7}); }, +[] { at::zeros({2, 1}).view({3}); }}) {
    const std::string invalid = what_of(f);
    ASSERT_FALSE(invalid.empty()) << "ATen took sizes that do not hold the elements";
    EXPECT_TRUE(says_invalid_shape(invalid)) << invalid;
  }
  const std::string shape = what_of([] { at::zeros({2}).add_(at::zeros({3})); });
  EXPECT_FALSE(says_invalid_shape(shape)) << shape;
}

}  // namespace
}  // namespace tj::graph
