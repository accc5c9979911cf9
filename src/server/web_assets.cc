#include "server/web_assets.h"

namespace fulcrum::server {

const WebAsset* FindWebAsset(std::string_view path) {
  if (const auto query = path.find('?'); query != std::string_view::npos)
    path = path.substr(0, query);
  if (path == "/index.html") path = "/";
  for (const WebAsset& asset : EmbeddedWebAssets()) {
    if (asset.path == path) return &asset;
  }
  return nullptr;
}

}  // namespace fulcrum::server
