// The single hook between the agent's HTTP server and the dashboard's embedded files: when the
// dashboard module (server/web_assets.h, web/) is in the build, its FindWebAsset answers `/` and
// `/assets/*`; until then a minimal built-in page at `/` lists the /v1 endpoints. Thread-safe.
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
