// The embedded dashboard: every file the page references is embedded, byte for byte as in web/,
// with the right content type, and nothing the page loads comes from outside the agent.
#include "server/web_assets.h"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace fulcrum::server {
namespace {

std::string ReadSourceFile(const std::string& relative) {
  std::ifstream in(std::string(FULCRUM_SOURCE_DIR) + "/" + relative, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(WebAssets, PageAndScriptsMatchTheirSources) {
  const struct {
    const char* path;
    const char* file;
    const char* type_prefix;
  } kExpected[] = {
      {"/", "web/index.html", "text/html"},
      {"/assets/app.js", "web/app.js", "text/javascript"},
      {"/assets/style.css", "web/style.css", "text/css"},
      {"/assets/uPlot.iife.min.js", "web/node_modules/uplot/dist/uPlot.iife.min.js",
       "text/javascript"},
      {"/assets/uPlot.min.css", "web/node_modules/uplot/dist/uPlot.min.css", "text/css"},
  };
  for (const auto& expected : kExpected) {
    SCOPED_TRACE(expected.path);
    const WebAsset* asset = FindWebAsset(expected.path);
    ASSERT_NE(asset, nullptr);
    const std::string source = ReadSourceFile(expected.file);
    ASSERT_FALSE(source.empty());
    EXPECT_EQ(asset->body, source);
    EXPECT_TRUE(asset->content_type.starts_with(expected.type_prefix)) << asset->content_type;
  }
}

TEST(WebAssets, LookupNormalizesIndexAndQuery) {
  EXPECT_EQ(FindWebAsset("/index.html"), FindWebAsset("/"));
  EXPECT_EQ(FindWebAsset("/assets/app.js?v=2"), FindWebAsset("/assets/app.js"));
  EXPECT_EQ(FindWebAsset("/assets/missing.js"), nullptr);
  EXPECT_EQ(FindWebAsset("/v1/gpus"), nullptr);
  EXPECT_EQ(FindWebAsset(""), nullptr);
  EXPECT_EQ(FindWebAsset("/assets/../index.html"), nullptr);
}

// Every src/href in the page names an embedded asset (or is inline data:), so the page loads
// nothing from a CDN or the network.
TEST(WebAssets, PageReferencesOnlyEmbeddedAssets) {
  const WebAsset* page = FindWebAsset("/");
  ASSERT_NE(page, nullptr);
  const std::string html(page->body);
  // Every src="..." and href="..." attribute value (a plain scan; std::regex trips g++ 12's
  // -Wmaybe-uninitialized under the sanitizers).
  std::vector<std::string> urls;
  for (const char* attribute : {"src=\"", "href=\""}) {
    for (size_t pos = html.find(attribute); pos != std::string::npos;
         pos = html.find(attribute, pos + 1)) {
      if (pos > 0 && std::isalnum(static_cast<unsigned char>(html[pos - 1]))) continue;
      size_t start = pos + std::string_view(attribute).size();
      size_t end = html.find('"', start);
      if (end != std::string::npos) urls.push_back(html.substr(start, end - start));
    }
  }
  std::set<std::string> seen;
  for (const std::string& url : urls) {
    seen.insert(url);
    if (url.starts_with("data:")) continue;
    EXPECT_NE(FindWebAsset(url), nullptr) << url << " is referenced by index.html but not embedded";
  }
  EXPECT_TRUE(seen.contains("/assets/app.js"));
  EXPECT_TRUE(seen.contains("/assets/uPlot.iife.min.js"));
}

TEST(WebAssets, PathsAreUnique) {
  std::set<std::string_view> paths;
  for (const WebAsset& asset : EmbeddedWebAssets()) {
    EXPECT_TRUE(paths.insert(asset.path).second) << asset.path;
  }
  EXPECT_EQ(paths.size(), 5u);
}

}  // namespace
}  // namespace fulcrum::server
