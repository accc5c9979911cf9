// The dashboard's static files (web/), embedded into the binary at build time by
// web/CMakeLists.txt (the table is generated; nothing is read from disk at run time).
// Paths are URL paths as the agent serves them: "/" for the page, "/assets/<file>" for the rest.
// The data is immutable and lives for the whole program; safe to call from any thread.
#pragma once

#include <span>
#include <string_view>

namespace fulcrum::server {

struct WebAsset {
  std::string_view path;          // URL path, e.g. "/" or "/assets/app.js"
  std::string_view content_type;  // full Content-Type value, e.g. "text/css; charset=utf-8"
  std::string_view body;          // the file's bytes
};

// Every embedded asset (defined in the generated web_assets_data.cc).
std::span<const WebAsset> EmbeddedWebAssets();

// The asset served at `path` ("/index.html" is an alias of "/"; a query string is ignored),
// or nullptr when there is none (the server answers 404).
const WebAsset* FindWebAsset(std::string_view path);

}  // namespace fulcrum::server
