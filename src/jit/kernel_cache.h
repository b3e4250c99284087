// The on-disk kernel cache: compiled kernels as object files, so that a
// second process running the same program skips LLVM entirely.
//
// Where: `<base>/kernels-<tracejit version>-llvm<LLVM version>/`, the base
// being `tracejit.config.cache_dir` (set_base_directory), else
// `$TRACEJIT_CACHE_DIR`, else `$XDG_CACHE_HOME/tracejit`, else
// `~/.cache/tracejit` (resolved on first use; deleting the directory clears
// the cache; an empty base turns the disk cache off). The same store keeps
// other areas under the base (compile/graph_cache.h: `graphs-...`), with one
// size cap over all of them: past it, the least recently used entries (by
// modification time, which a load refreshes) are deleted. An entry is named by a 128-bit hash of
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

// The kernels' directory ("" when the cache is off, or neither
// XDG_CACHE_HOME nor HOME is set), read from the environment on first use
// and by refresh_directory().
std::string directory();
void refresh_directory();
// The base directory every area lives under ("" when off).
std::string base_directory();
// tracejit.config.cache_dir: nullopt reads the environment as above; ""
// turns the disk caches off.
void set_base_directory(std::optional<std::string> dir);
// tracejit.config.cache_max_mb: the cap over all areas together.
void set_size_limit(long long bytes);

// The GNU build ID of the binary this code is linked into ("" if none): it
// changes with any change of tracejit's code.
const std::string& build_id();
// The GNU build ID of the shared object (or executable) holding `address`.
std::string build_id_of(const void* address);

// An area's entries (`area`: a directory name under the base): the bytes
// stored under `key`, or nullopt (missing, unreadable, corrupt: a `perf`
// line says which). A hit refreshes the entry's time for the LRU rule.
std::optional<std::string> load_entry(std::string_view area, std::string_view key);
// Stores `bytes` under `key` in `area` (temporary file + rename), then
// evicts the least recently used entries while the store is over its cap.
bool store_entry(std::string_view area, std::string_view key, std::string_view bytes);
// Where `key`'s entry lives in `area` ("" when the cache is off).
std::string entry_path(std::string_view area, std::string_view key);

// The bytes stored under `key`, or nullopt (missing, unreadable, corrupt).
std::optional<std::string> load(std::string_view key);

// Stores `bytes` under `key`; false (and a `perf` log line) when it could not.
bool store(std::string_view key, std::string_view bytes);

}  // namespace tj::jit::kernel_cache
