// The shipped catalog (catalog/ of the source tree, without the user's offers.d files) for the
// planner benchmarks: loaded once per process, aborts when it does not load (a benchmark has
// no error path). Header-only; the first call is not thread-safe to race with others' loads.
#pragma once

#include <cstdlib>
#include <string>

#include "catalog/catalog.h"

namespace fulcrum::bench_support {

inline const std::string& ShippedCatalogDir() {
  static const std::string dir = std::string(FULCRUM_SOURCE_DIR) + "/catalog";
  return dir;
}

inline const catalog::Catalog& ShippedCatalog() {
  static const catalog::Catalog shipped = [] {
    catalog::LoadOptions options;
    options.include_user_offers = false;
    auto c = catalog::Catalog::Load(ShippedCatalogDir(), options);
    if (!c.ok()) std::abort();
    return *c;
  }();
  return shipped;
}

}  // namespace fulcrum::bench_support
