#include "core/paths.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace fulcrum {

std::string ExecutableDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  return exe.parent_path().string();
}

std::string DefaultCatalogDir(const std::string& flag_value) {
  namespace fs = std::filesystem;
  if (!flag_value.empty()) return flag_value;
  if (const char* env = std::getenv("FULCRUM_CATALOG"); env && *env) return env;
  std::error_code ec;
  std::string exe_dir = ExecutableDir();
  if (!exe_dir.empty()) {
    for (const char* rel : {"../catalog", "../share/fulcrum/catalog"}) {
      fs::path candidate = fs::path(exe_dir) / rel;
      if (fs::is_directory(candidate, ec)) return fs::weakly_canonical(candidate, ec).string();
    }
  }
  return std::string(FULCRUM_SOURCE_DIR) + "/catalog";
}

std::string UserConfigDir() {
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg)
    return std::string(xdg) + "/fulcrum";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.config/fulcrum";
  return ".config/fulcrum";
}

}  // namespace fulcrum
