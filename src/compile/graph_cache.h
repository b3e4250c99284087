// The graph cache: AOT's result for a captured graph kept on disk, so that
// a second process that traces the same graph with inputs of the same kind
// takes it from there and captures, partitions and optimizes nothing (as
// TorchDynamo's FX graph cache and AOTAutograd cache do). Its kernels come
// from the kernel cache beside it (jit/kernel_cache.h), so such a compile
// only lowers the cached graphs and loads their objects.
//
// An entry holds the capture's metadata (graph::aot::Capture: inputs,
// outputs, mutations, aliasing, tangents), the captured graph (joint with a
// backward), and the forward and backward graphs as the backend is handed
// them (after the partition and the passes), in the graph text format
// (graph/text_format.h). Its key: the graph as AOT sees it (the boundary's
// graph, its text with constants and locations), each input's metadata
// (sizes, strides, offset, dtype, device, layout, dispatch keys,
// requires_grad, leafness, which inputs share storage), grad mode, the
// backend's name and what of it AOT reads, and the versions (tracejit's
// version and build ID, LibTorch's version and library build ID, LLVM's),
// all of which the entry repeats in its first line. A stored entry is read
// back before it is written (parse(print(g)) must print as g), so what
// cannot round-trip is never cached.
//
// Never trusted: an entry that is truncated, corrupt (checksum), of another
// version or key, or that does not parse is ignored with a `perf` log line
// and overwritten by the next compile. Writes are a temporary file renamed
// into place (two processes, DDP ranks, never leave a torn entry); one size
// cap with least-recently-used eviction covers kernels and graphs
// (`tracejit.config.cache_max_mb`). Where: `<cache_dir>/graphs-<version>/`
// (kernel_cache.h). Off with `tracejit.config.graph_cache = False`
// (`TRACEJIT_GRAPH_CACHE=0`), or with every disk cache by
// `tracejit.config.cache_dir = ""`. A size template's compiles (dynamic
// shapes) do not use it.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include "compile/aot/steps.h"
#include "graph/graph.h"
#include "jit/backend.h"

namespace tj::compile::graph_cache {

void set_enabled(bool on);
bool enabled();

// The key text of AOT's result for `graph` (the boundary's graph) with
// these inputs and options on `backend`.
std::string key_of(const graph::Graph& graph, c10::ArrayRef<at::Tensor> inputs, const jit::Backend& backend,
                   const jit::AotOptions& options);

// AOT's result as aot_capture + aot_partition + the passes left it.
struct Entry {
  jit::AotCaptured captured;
  jit::AotPartitioned graphs;  // as handed to the backend
};

// The entry stored under `key`, made into a capture of `graph` (the
// boundary's graph, the plan's original); nullopt when there is none or it
// is not to be trusted (a `perf` line says why).
std::optional<Entry> load(const std::string& key, std::shared_ptr<const graph::Graph> graph,
                          c10::ArrayRef<at::Tensor> inputs, const jit::AotOptions& options);

// Stores a capture's result under `key` (nothing for a template's, or one
// whose graphs do not read back as they print); false when nothing was
// written.
bool store(const std::string& key, const jit::AotCaptured& captured, const jit::AotPartitioned& graphs);

// The serialized entry alone (for tests): store() writes exactly this.
std::optional<std::string> serialize(const std::string& key, const jit::AotCaptured& captured,
                                     const jit::AotPartitioned& graphs);

// The store's area name (`graphs-<version>`) and an entry's file.
std::string area();
std::string entry_path(const std::string& key);

}  // namespace tj::compile::graph_cache
