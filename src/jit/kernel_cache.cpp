// The on-disk kernel cache; see kernel_cache.h.
#include "jit/kernel_cache.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

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

std::string resolve_directory() {
  std::string base;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    base = xdg;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    base = std::string(home) + "/.cache";
  } else {
    return "";
  }
  return base + "/tracejit/kernels-" TRACEJIT_VERSION "-llvm" TRACEJIT_LLVM_VERSION;
}

// The GNU build ID of the binary this code is linked into (the executable
// or the extension module): it changes whenever the code generator does, so
// objects from an older build are never taken for this one's.
std::string find_build_id() {
  struct Search {
    uintptr_t address;
    std::string id;
  } search{reinterpret_cast<uintptr_t>(&find_build_id), ""};
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

std::string path_of(std::string_view key) {
  static const std::string build = find_build_id();
  return directory() + "/" + hash_hex(build + ";" + std::string(key)) + ".o";
}

}  // namespace

std::string hash_hex(std::string_view text) {
  return hex(fnv1a(text, 14695981039346656037ULL)) + hex(fnv1a(text, 0x9e3779b97f4a7c15ULL));
}

namespace {
std::mutex g_mutex;
std::optional<std::string> g_directory;
}  // namespace

std::string directory() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_directory) g_directory = resolve_directory();
  return *g_directory;
}

void refresh_directory() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_directory = resolve_directory();
}

std::optional<std::string> load(std::string_view key) {
  if (directory().empty()) return std::nullopt;
  std::ifstream in(path_of(key), std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string file = buffer.str();
  // magic, 16 hex digits of checksum, '\n', payload
  const size_t header = kMagic.size() + 17;
  if (file.size() < header || std::string_view(file).substr(0, kMagic.size()) != kMagic) return std::nullopt;
  std::string_view sum = std::string_view(file).substr(kMagic.size(), 16);
  std::string_view payload = std::string_view(file).substr(header);
  if (file[header - 1] != '\n' || checksum(payload) != sum) {
    TJ_LOG(perf, "kernel cache: ignoring a corrupt entry {}", path_of(key));
    return std::nullopt;
  }
  return std::string(payload);
}

bool store(std::string_view key, std::string_view bytes) {
  const std::string dir = directory();
  if (dir.empty()) return false;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path = path_of(key);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << kMagic << checksum(bytes) << '\n';
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      TJ_LOG(perf, "kernel cache: cannot write {}", tmp);
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, path, ec);  // atomic: readers see the old file or the new one
  if (ec) {
    TJ_LOG(perf, "kernel cache: cannot rename {} into place: {}", tmp, ec.message());
    std::filesystem::remove(tmp, ec);
    return false;
  }
  return true;
}

}  // namespace tj::jit::kernel_cache
