#include "server/dashboard.h"

#include "server/web_assets.h"

namespace fulcrum::server {

std::optional<DashboardFile> FindDashboardFile(std::string_view path) {
  if (const WebAsset* asset = FindWebAsset(path)) {
    return DashboardFile{std::string(asset->content_type), asset->body};
  }
  return std::nullopt;
}

}  // namespace fulcrum::server
