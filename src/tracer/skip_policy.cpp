// The inlining skip policy; see skip_policy.h.
#include "tracer/skip_policy.h"

#include <array>

namespace tj::tracer {

namespace {

constexpr std::string_view kStdlib = "/usr/lib/python3.11/";
constexpr std::array<std::string_view, 2> kPackageDirs = {"/dist-packages/", "/site-packages/"};

// torch's Python layers that model code calls and the tracer inlines.
// grad_mode.py: the `@torch.no_grad()` decorator's wrapper (AdamW.step),
// whose `with self.clone():` the tracer models; amp/autocast_mode.py: the
// `@torch.autocast(...)` decorator's wrapper, whose `with` the tracer models;
// nn/_reduction.py: `get_enum(reduction)`, which every loss with `reduction=`
// calls (TorchDynamo inlines all of torch.nn); distributions/: Normal,
// Categorical, ... of RL and VAE code (TorchDynamo inlines them too);
// utils/_pytree.py: tree_flatten/tree_unflatten/tree_map, plain Python over
// containers; cuda/amp/grad_scaler.py: `scaler.scale(loss)`, `scaler.step(opt)`
// and `scaler.update()` of AMP training loops, which on a CPU-only torch (or
// with `enabled=False`) return at once or call `optimizer.step()`.
constexpr std::array<std::string_view, 12> kTracedTorchParts = {
    "torch/nn/modules/",          "torch/nn/functional.py",     "torch/functional.py",
    "torch/nn/utils/",            "torch/optim/",               "torch/nn/common_types.py",
    "torch/autograd/grad_mode.py", "torch/amp/autocast_mode.py", "torch/nn/_reduction.py",
    "torch/distributions/",       "torch/utils/_pytree.py",     "torch/cuda/amp/grad_scaler.py",
};

// Single functions of otherwise skipped torch files, by __qualname__.
// boolean_dispatch's closure: F.max_pool1d/2d/3d, F.adaptive_max_pool*,
// F.fractional_max_pool* pick their variant by `return_indices` through it;
// is_tensor_like: torch.distributions' broadcast_all asks it of each argument;
// is_lazy (an isinstance): Module._load_from_state_dict asks it of each
// parameter (DQN's `target_net.load_state_dict(policy_net.state_dict())`).
constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kTracedTorchFunctions = {{
    {"torch/_jit_internal.py", "boolean_dispatch.<locals>.fn"},
    {"torch/overrides.py", "is_tensor_like"},
    {"torch/nn/parameter.py", "is_lazy"},
}};

// The path of `file` below its package directory ("torch/nn/functional.py"),
// or empty when it is not in one.
std::string_view package_relative(std::string_view file) {
  for (std::string_view dir : kPackageDirs) {
    size_t at = file.find(dir);
    if (at != std::string_view::npos) return file.substr(at + dir.size());
  }
  return {};
}

}  // namespace

bool is_installed_file(std::string_view file) {
  return !package_relative(file).empty() || file.starts_with(kStdlib) || file.starts_with("<frozen ");
}

bool is_polyfill_file(std::string_view file) { return file.ends_with("/tracejit/_polyfills.py"); }

std::optional<std::string> skip_inline_reason(std::string_view file, std::string_view qualname) {
  if (file.starts_with(kStdlib) || file.starts_with("<frozen ")) return "the standard library";
  std::string_view rel = package_relative(file);
  if (rel.empty()) return std::nullopt;  // user code
  if (rel.starts_with("tracejit/")) return "tracejit itself";
  if (!rel.starts_with("torch/")) return std::nullopt;  // a third-party package
  for (std::string_view part : kTracedTorchParts) {
    if (rel.starts_with(part)) return std::nullopt;
  }
  for (const auto& [part, function] : kTracedTorchFunctions)
    if (rel == part && qualname == function) return std::nullopt;
  return "torch internals (" + std::string(rel) + ")";
}

bool is_inlined_torch_file(std::string_view file) {
  return package_relative(file).starts_with("torch/") && !skip_inline_reason(file);
}

std::optional<std::string> skip_frame_reason(std::string_view file) {
  if (package_relative(file).starts_with("torch/")) return "torch (" + std::string(package_relative(file)) + ")";
  return skip_inline_reason(file);
}

}  // namespace tj::tracer
