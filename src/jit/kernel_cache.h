// The on-disk kernel cache: compiled kernels as object files, so that a
// second process running the same program skips LLVM entirely.
//
// Where: `$XDG_CACHE_HOME/tracejit/kernels-<tracejit version>-llvm<LLVM
// version>/`, else `~/.cache/tracejit/...` (resolved on first use; deleting
// the directory clears the cache). An entry is named by a 128-bit hash of
// its key (the kernel's canonical loop IR, the host CPU's name and
// features and the codegen revision, see llvm_codegen.cpp), so the
// version, the LLVM build, the emitter and the CPU all select different
// files. Each file carries a checksum of its
// bytes: a truncated or corrupt entry is ignored (and rewritten by the next
// compile). Writes go to a temporary file renamed into place, so two
// processes never read half an entry. Any I/O error just means a miss.
// This file knows nothing of LLVM: entries are opaque bytes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tj::jit::kernel_cache {

// 32 hex digits: two independent 64-bit FNV-1a hashes of `text`.
std::string hash_hex(std::string_view text);

// The cache directory ("" when neither XDG_CACHE_HOME nor HOME is set),
// read from the environment on first use and by refresh_directory().
std::string directory();
void refresh_directory();

// The bytes stored under `key`, or nullopt (missing, unreadable, corrupt).
std::optional<std::string> load(std::string_view key);

// Stores `bytes` under `key`; false (and a `perf` log line) when it could not.
bool store(std::string_view key, std::string_view bytes);

}  // namespace tj::jit::kernel_cache
