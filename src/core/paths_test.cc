#include "core/paths.h"

#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace fulcrum {
namespace {

// Sets an environment variable for the test's lifetime, restoring the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(PathsTest, UserDataDirHonoursXdgDataHome) {
  ScopedEnv home("HOME", "/home/someone");
  ScopedEnv xdg("XDG_DATA_HOME", "/data/xdg");
  EXPECT_EQ(UserDataDir(), "/data/xdg/fulcrum");
}

TEST(PathsTest, UserDataDirFallsBackToLocalShare) {
  ScopedEnv home("HOME", "/home/someone");
  ScopedEnv xdg("XDG_DATA_HOME", nullptr);
  EXPECT_EQ(UserDataDir(), "/home/someone/.local/share/fulcrum");
}

TEST(PathsTest, RelativeXdgDirectoriesAreIgnored) {
  ScopedEnv home("HOME", "/home/someone");
  ScopedEnv data("XDG_DATA_HOME", "relative/data");
  ScopedEnv config("XDG_CONFIG_HOME", "relative/config");
  EXPECT_EQ(UserDataDir(), "/home/someone/.local/share/fulcrum");
  EXPECT_EQ(UserConfigDir(), "/home/someone/.config/fulcrum");
}

TEST(PathsTest, UserConfigDirHonoursXdgConfigHome) {
  ScopedEnv home("HOME", "/home/someone");
  ScopedEnv xdg("XDG_CONFIG_HOME", "/cfg");
  EXPECT_EQ(UserConfigDir(), "/cfg/fulcrum");
}

TEST(PathsTest, DataDirOrder) {
  ScopedEnv home("HOME", "/home/someone");
  ScopedEnv xdg("XDG_DATA_HOME", "/data/xdg");
  {
    ScopedEnv env("FULCRUM_DATA_DIR", "/srv/fulcrum");
    EXPECT_EQ(DataDir("/flag/dir"), "/flag/dir");
    EXPECT_EQ(DataDir(""), "/srv/fulcrum");
  }
  ScopedEnv env("FULCRUM_DATA_DIR", nullptr);
  EXPECT_EQ(DataDir(""), geteuid() == 0 ? "/var/lib/fulcrum" : "/data/xdg/fulcrum");
}

}  // namespace
}  // namespace fulcrum
