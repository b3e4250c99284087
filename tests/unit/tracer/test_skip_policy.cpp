// The skip policy (skip_policy.h): which files are inlined into a graph,
// which frames CPython calls are traced on their own, and which skipped
// frames explain reports (torch code the tracer would inline).
#include <gtest/gtest.h>

#include "tracer/skip_policy.h"

namespace tj::tracer {
namespace {

constexpr const char* kTorch = "/usr/lib/python3/dist-packages/torch/";

std::string torch_file(const char* rel) { return std::string(kTorch) + rel; }

TEST(SkipPolicy, InlinesUserCodeAndTorchsPythonLayers) {
  EXPECT_FALSE(skip_inline_reason("/home/me/train.py"));
  EXPECT_FALSE(skip_inline_reason(torch_file("optim/sgd.py")));
  EXPECT_FALSE(skip_inline_reason(torch_file("nn/utils/clip_grad.py")));
  EXPECT_FALSE(skip_inline_reason(torch_file("nn/_reduction.py")));
  EXPECT_TRUE(skip_inline_reason("/usr/lib/python3.11/copy.py"));
  EXPECT_TRUE(skip_inline_reason(torch_file("_tensor.py")));
}

TEST(SkipPolicy, FramesOfTorchAreSkippedButInlinedOnesAreReported) {
  // A frame CPython calls in torch is never traced on its own...
  EXPECT_TRUE(skip_frame_reason(torch_file("optim/sgd.py")));
  EXPECT_TRUE(skip_frame_reason(torch_file("_tensor.py")));
  EXPECT_FALSE(skip_frame_reason("/home/me/train.py"));
  // ...and explain lists it when the tracer would have inlined its code.
  EXPECT_TRUE(is_inlined_torch_file(torch_file("optim/sgd.py")));
  EXPECT_TRUE(is_inlined_torch_file(torch_file("nn/utils/clip_grad.py")));
  EXPECT_FALSE(is_inlined_torch_file(torch_file("_tensor.py")));
  EXPECT_FALSE(is_inlined_torch_file("/usr/lib/python3.11/copy.py"));
  EXPECT_FALSE(is_inlined_torch_file("/home/me/train.py"));
}

}  // namespace
}  // namespace tj::tracer
