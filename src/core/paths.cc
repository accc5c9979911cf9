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

namespace {

// $<xdg_variable>/fulcrum when it is an absolute path (the XDG spec ignores relative ones), else
// $HOME/<home_relative>/fulcrum, else <home_relative>/fulcrum.
std::string XdgDir(const char* xdg_variable, const std::string& home_relative) {
  if (const char* xdg = std::getenv(xdg_variable); xdg && *xdg == '/')
    return std::string(xdg) + "/fulcrum";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/" + home_relative + "/fulcrum";
  return home_relative + "/fulcrum";
}

}  // namespace

std::string UserConfigDir() { return XdgDir("XDG_CONFIG_HOME", ".config"); }

std::string UserDataDir() { return XdgDir("XDG_DATA_HOME", ".local/share"); }

std::string DataDir(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  if (const char* env = std::getenv("FULCRUM_DATA_DIR"); env && *env) return env;
  if (geteuid() == 0) return "/var/lib/fulcrum";
  return UserDataDir();
}

}  // namespace fulcrum
