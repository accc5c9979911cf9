#include "support/sanitizer.h"

#include <filesystem>
#include <fstream>

namespace fulcrum::testing {
namespace {

// The path of the shared sanitizer runtime this process has loaded (libasan.so.N, libtsan.so.N),
// read from /proc/self/maps; "" when the runtime is linked in statically (clang) or absent.
std::string SharedSanitizerRuntime() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string name = std::filesystem::path(path).filename().string();
    if (name.rfind("libasan.so", 0) == 0 || name.rfind("libtsan.so", 0) == 0) return path;
  }
  return "";
}

}  // namespace

std::string FaketimePreload() {
  std::string library;
  for (const char* path : {"/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                           "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1"}) {
    if (std::filesystem::exists(path)) library = path;
  }
  if (library.empty()) return "";
  const std::string runtime = SharedSanitizerRuntime();
  return runtime.empty() ? library : runtime + ":" + library;
}

}  // namespace fulcrum::testing
