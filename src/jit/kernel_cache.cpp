// The on-disk kernel cache; see kernel_cache.h.
#include "jit/kernel_cache.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include "support/log.h"
#include "tracejit_build_config.h"

namespace tj::jit::kernel_cache {

namespace {

constexpr std::string_view kMagic = "tracejit-kernel-1\n";

uint64_t fnv1a(std::string_view text, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string checksum(std::string_view bytes) { return hex(fnv1a(bytes, 14695981039346656037ULL)); }

std::mutex g_mutex;
std::optional<std::string> g_base;                   // resolved base, guarded by g_mutex
std::optional<std::optional<std::string>> g_config;  // set_base_directory's, guarded by g_mutex
std::atomic<long long> g_limit{1024LL << 20};
long long g_total = -1;  // bytes under the base as last counted (-1: not yet), guarded by g_mutex

std::string resolve_base(const std::optional<std::string>& configured) {
  if (configured) return *configured;
  if (const char* dir = std::getenv("TRACEJIT_CACHE_DIR")) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/tracejit";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/tracejit";
  return "";
}

constexpr std::string_view kKernelArea = "kernels-" TRACEJIT_VERSION "-llvm" TRACEJIT_LLVM_VERSION;

// The GNU build ID of the binary this code is linked into (the executable
// or the extension module): it changes whenever the code generator does, so
// objects from an older build are never taken for this one's.
std::string find_build_id(const void* address) {
  struct Search {
    uintptr_t address;
    std::string id;
  } search{reinterpret_cast<uintptr_t>(address), ""};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        bool contains = false;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          uintptr_t start = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && s->address >= start && s->address < start + ph.p_memsz) contains = true;
        }
        if (!contains) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
          const char* end = p + ph.p_memsz;
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
            const char* name = p + sizeof(ElfW(Nhdr));
            const char* desc = name + ((note->n_namesz + 3) & ~3u);
            if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::string_view(name, 3) == "GNU") {
              for (unsigned j = 0; j < note->n_descsz; ++j) {
                char hexbyte[3];
                std::snprintf(hexbyte, sizeof hexbyte, "%02x", static_cast<unsigned char>(desc[j]));
                s->id += hexbyte;
              }
              return 1;
            }
            p = desc + ((note->n_descsz + 3) & ~3u);
          }
        }
        return 1;
      },
      &search);
  return search.id;
}

std::string path_in(const std::string& base, std::string_view area, std::string_view key) {
  if (base.empty()) return "";
  const std::string_view ext = area == kKernelArea ? ".o" : ".bin";
  return base + "/" + std::string(area) + "/" + hash_hex(build_id() + ";" + std::string(key)) + std::string(ext);
}

bool is_entry_file(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  return name.find(".tmp.") == std::string::npos && (name.ends_with(".o") || name.ends_with(".bin"));
}

// Every entry file under `base` with its size and time.
struct FileInfo {
  std::filesystem::path path;
  std::filesystem::file_time_type time;
  uintmax_t size = 0;
};
std::vector<FileInfo> list_entries(const std::string& base) {
  std::vector<FileInfo> out;
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || !is_entry_file(it->path())) continue;
    FileInfo f{it->path(), it->last_write_time(ec), it->file_size(ec)};
    if (!ec) out.push_back(std::move(f));
    ec.clear();
  }
  return out;
}

// With g_mutex held: counts the bytes under `base` once, adds `added`, and
// past the cap deletes the least recently used entries down to 90 % of it.
void account_and_evict(const std::string& base, long long added) {
  if (g_total < 0) {
    g_total = 0;
    for (const FileInfo& f : list_entries(base)) g_total += static_cast<long long>(f.size);
  } else {
    g_total += added;
  }
  const long long limit = g_limit.load();
  if (g_total <= limit) return;
  std::vector<FileInfo> files = list_entries(base);
  std::sort(files.begin(), files.end(), [](const FileInfo& a, const FileInfo& b) { return a.time < b.time; });
  long long total = 0;
  for (const FileInfo& f : files) total += static_cast<long long>(f.size);
  size_t removed = 0;
  std::error_code ec;
  for (const FileInfo& f : files) {
    if (total <= limit - limit / 10) break;
    if (std::filesystem::remove(f.path, ec)) {
      total -= static_cast<long long>(f.size);
      ++removed;
    }
  }
  g_total = total;
  TJ_LOG(perf, "disk cache: over its cap of {} bytes: removed the {} least recently used entries ({} bytes left)",
         limit, removed, total);
}

}  // namespace

std::string hash_hex(std::string_view text) {
  return hex(fnv1a(text, 14695981039346656037ULL)) + hex(fnv1a(text, 0x9e3779b97f4a7c15ULL));
}

std::string base_directory() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_base) g_base = resolve_base(g_config ? *g_config : std::nullopt);
  return *g_base;
}

std::string directory() {
  std::string base = base_directory();
  return base.empty() ? "" : base + "/" + std::string(kKernelArea);
}

void refresh_directory() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_base = resolve_base(g_config ? *g_config : std::nullopt);
  g_total = -1;
}

void set_base_directory(std::optional<std::string> dir) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_config = std::move(dir);
  g_base = resolve_base(*g_config);
  g_total = -1;
}

void set_size_limit(long long bytes) { g_limit = bytes; }

const std::string& build_id() {
  static const std::string id = find_build_id(reinterpret_cast<const void*>(&find_build_id));
  return id;
}

std::string build_id_of(const void* address) { return find_build_id(address); }

std::string entry_path(std::string_view area, std::string_view key) { return path_in(base_directory(), area, key); }

std::optional<std::string> load_entry(std::string_view area, std::string_view key) {
  const std::string path = entry_path(area, key);
  if (path.empty()) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string file = buffer.str();
  // magic, 16 hex digits of checksum, '\n', payload
  const size_t header = kMagic.size() + 17;
  if (file.size() < header || std::string_view(file).substr(0, kMagic.size()) != kMagic) {
    TJ_LOG(perf, "disk cache: ignoring an entry that is not one (truncated, or another format): {}", path);
    return std::nullopt;
  }
  std::string_view sum = std::string_view(file).substr(kMagic.size(), 16);
  std::string_view payload = std::string_view(file).substr(header);
  if (file[header - 1] != '\n' || checksum(payload) != sum) {
    TJ_LOG(perf, "disk cache: ignoring a corrupt or truncated entry {}", path);
    return std::nullopt;
  }
  std::error_code ec;  // least recently used: a hit is a use
  std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now(), ec);
  return std::string(payload);
}

bool store_entry(std::string_view area, std::string_view key, std::string_view bytes) {
  const std::string base = base_directory();
  if (base.empty()) return false;
  const std::string dir = base + "/" + std::string(area);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path = path_in(base, area, key);
  static std::atomic<unsigned> serial{0};  // threads of one process write apart too
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(++serial);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << kMagic << checksum(bytes) << '\n';
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      TJ_LOG(perf, "disk cache: cannot write {}", tmp);
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, path, ec);  // atomic: readers see the old file or the new one
  if (ec) {
    TJ_LOG(perf, "disk cache: cannot rename {} into place: {}", tmp, ec.message());
    std::filesystem::remove(tmp, ec);
    return false;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  account_and_evict(base, static_cast<long long>(kMagic.size() + 17 + bytes.size()));
  return true;
}

std::optional<std::string> load(std::string_view key) { return load_entry(kKernelArea, key); }

bool store(std::string_view key, std::string_view bytes) { return store_entry(kKernelArea, key, bytes); }

}  // namespace tj::jit::kernel_cache
