// The single hook between the agent's HTTP server and the dashboard's embedded files: the
// dashboard module (server/web_assets.h, generated from web/ by web/CMakeLists.txt, always in the
// build) answers `/` and `/assets/*`; any other path is not a dashboard file. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fulcrum::server {

struct DashboardFile {
  std::string content_type;
  std::string_view body;  // static storage
};

std::optional<DashboardFile> FindDashboardFile(std::string_view path);

}  // namespace fulcrum::server
