#include "server/dashboard.h"

#if __has_include("server/web_assets.h")
#include "server/web_assets.h"
#define FULCRUM_HAVE_WEB_ASSETS 1
#endif

namespace fulcrum::server {
namespace {

constexpr std::string_view kFallbackPage = R"(<!doctype html>
<html><head><meta charset="utf-8"><title>fulcrum agent</title></head>
<body style="font-family: sans-serif">
<h1>fulcrum agent</h1>
<p>The dashboard is not built into this binary. The agent's API:</p>
<ul>
<li><a href="/v1/health">/v1/health</a></li>
<li><a href="/v1/gpus">/v1/gpus</a></li>
<li><a href="/v1/series?metric=gpu_temperature_celsius">/v1/series?metric=gpu_temperature_celsius</a></li>
<li><a href="/v1/alerts">/v1/alerts</a></li>
<li><a href="/v1/host">/v1/host</a></li>
<li><a href="/v1/jobs">/v1/jobs</a></li>
<li><a href="/v1/idle">/v1/idle</a></li>
<li><a href="/metrics">/metrics</a></li>
</ul>
</body></html>
)";

}  // namespace

std::optional<DashboardFile> FindDashboardFile(std::string_view path) {
#ifdef FULCRUM_HAVE_WEB_ASSETS
  if (const WebAsset* asset = FindWebAsset(path)) {
    return DashboardFile{std::string(asset->content_type), asset->body};
  }
  return std::nullopt;
#else
  if (path == "/" || path == "/index.html") {
    return DashboardFile{"text/html; charset=utf-8", kFallbackPage};
  }
  return std::nullopt;
#endif
}

}  // namespace fulcrum::server
