// The serving engines' facts as data: catalog/serving_engines.csv (one row per engine: its
// scheduler, the batching modes it runs, its default token budget per step, the precisions it
// can run and the GPU vendors it runs on, each row sourced) read into serve::EngineProfile.
// Errors name file:line and the column. Pure functions on values; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "serve/serve.h"

namespace fulcrum::serve {

// Every engine of ParseEngine's list, in its order; InvalidInput naming file:line when a row is
// malformed, an engine is missing or repeated, or a precision/batching name is unknown.
Result<std::vector<EngineProfile>> ParseEngineTable(std::string_view text, const std::string& file);
// catalog_dir/serving_engines.csv.
Result<std::vector<EngineProfile>> LoadEngineTable(const std::string& catalog_dir);
// The profile of `name` (ParseEngine's names) from catalog_dir's table.
Result<EngineProfile> LoadEngine(const std::string& catalog_dir, std::string_view name);

}  // namespace fulcrum::serve
