// Test-only: the shipped catalog (catalog/ of this source tree, without the user's offers.d),
// loaded once per test binary, and its GPUs by name; shared by the serve tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "catalog/catalog.h"

namespace fulcrum::serve::testing {

inline const std::string kCatalogDir = std::string(FULCRUM_SOURCE_DIR) + "/catalog";

inline const catalog::Catalog& Cat() {
  static const catalog::Catalog* cat = [] {
    catalog::LoadOptions load;
    load.include_user_offers = false;
    Result<catalog::Catalog> c = catalog::Catalog::Load(kCatalogDir, load);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return new catalog::Catalog(std::move(*c));
  }();
  return *cat;
}

inline catalog::Gpu Gpu(const std::string& name) {
  const catalog::Gpu* gpu = Cat().FindGpu(name);
  EXPECT_NE(gpu, nullptr) << name;
  return gpu != nullptr ? *gpu : catalog::Gpu{};
}

}  // namespace fulcrum::serve::testing
