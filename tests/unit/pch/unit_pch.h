// Precompiled header of the unit-test binaries that use LibTorch (with
// -Dpch=true; see docs/architecture.md "Build time"): ATen/ATen.h, which
// most of the graph, jit and compile tests include and which costs each of
// them ~6 s of parsing, GoogleTest and the standard headers. External
// headers only: an edit of ours must not rebuild it.
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
