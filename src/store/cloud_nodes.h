// The Slurm cloud nodes fulcrum powered up (`fulcrum slurm resume|suspend|resume-fail`) in
// jobs.db (table cloud_nodes, created on first write): one row per start of a node, with its
// offer, price and times, so that the running spend can be checked against a budget. Times are
// Unix seconds, prices USD per hour, unknown is nullopt. Free functions over a JobsDb's
// connection; as thread-safe as it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/sqlite.h"

namespace fulcrum::store {

struct CloudNodeRecord {
  int64_t id = 0;  // rowid, set by AddCloudNode
  std::string node;
  std::string offer;  // PROVIDER/INSTANCE/REGION
  double price_per_hour_usd = 0;
  double billing_seconds = 1;  // the provider's billing granularity (3600: by the hour)
  double started_at = 0;
  std::optional<double> ended_at;  // the instance ended (or will, at this time: a timer)
  // running | ending (a timer ends it at ended_at) | ended | failed (capacity, provider error)
  std::string state = "running";
  std::string reason;
};

// Inserts a row; returns its id.
Result<int64_t> AddCloudNode(Database& db, const CloudNodeRecord& node);
Status UpdateCloudNode(Database& db, const CloudNodeRecord& node);  // by id
// Every row, oldest first (empty when the table does not exist yet).
Result<std::vector<CloudNodeRecord>> ListCloudNodes(Database& db);
// The node's latest row, nullopt when it never started.
Result<std::optional<CloudNodeRecord>> LatestCloudNode(Database& db, const std::string& node);

// What a row costs up to `now`: the time it ran (to ended_at, else now) rounded up to its
// billing granularity, at its price.
double BilledUsd(const CloudNodeRecord& node, double now);

}  // namespace fulcrum::store
