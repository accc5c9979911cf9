// JSON views of the catalog's records, the field names of the documented --json contract:
// units in the names (memory_gib, memory_bandwidth_gb_per_second, on_demand_usd_per_hour,
// network_gbit_per_second, ...), unknown values as null. Pure functions, thread-safe.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "catalog/catalog.h"

namespace fulcrum::catalog {

nlohmann::json GpuToJson(const Gpu& gpu);
nlohmann::json OfferToJson(const Offer& offer);
nlohmann::json ProviderToJson(const Provider& provider);

// The shortest convenient label of a GPU for tables: its first alias when shorter than its
// canonical name ("H100" for H100-SXM5-80GB), else the name.
std::string GpuLabel(const Gpu& gpu);

}  // namespace fulcrum::catalog
