#include "store/cloud_nodes.h"

#include <algorithm>
#include <cmath>

namespace fulcrum::store {
namespace {

constexpr const char* kCreate =
    "CREATE TABLE IF NOT EXISTS cloud_nodes ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, node TEXT NOT NULL, offer TEXT NOT NULL,"
    " price_per_hour_usd REAL NOT NULL, billing_seconds REAL NOT NULL, started_at REAL NOT NULL,"
    " ended_at REAL, state TEXT NOT NULL, reason TEXT NOT NULL)";

constexpr const char* kSelect =
    "SELECT id, node, offer, price_per_hour_usd, billing_seconds, started_at, ended_at, state, "
    "reason FROM cloud_nodes ";

Result<bool> TableExists(Database& db) {
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db.Prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cloud_nodes'"));
  const bool found = s.Step();
  FULCRUM_RETURN_IF_ERROR(s.status());
  return found;
}

Result<std::vector<CloudNodeRecord>> Query(Database& db, const std::string& tail,
                                           const std::string& node) {
  std::vector<CloudNodeRecord> out;
  FULCRUM_ASSIGN_OR_RETURN(bool exists, TableExists(db));
  if (!exists) return out;
  FULCRUM_ASSIGN_OR_RETURN(Statement s, db.Prepare(std::string(kSelect) + tail));
  if (!node.empty()) s.Bind(1, node);
  while (s.Step()) {
    CloudNodeRecord r;
    r.id = s.ColumnInt(0);
    r.node = s.ColumnText(1);
    r.offer = s.ColumnText(2);
    r.price_per_hour_usd = s.ColumnDouble(3);
    r.billing_seconds = s.ColumnDouble(4);
    r.started_at = s.ColumnDouble(5);
    r.ended_at = s.ColumnOptionalDouble(6);
    r.state = s.ColumnText(7);
    r.reason = s.ColumnText(8);
    out.push_back(std::move(r));
  }
  FULCRUM_RETURN_IF_ERROR(s.status());
  return out;
}

}  // namespace

Result<int64_t> AddCloudNode(Database& db, const CloudNodeRecord& r) {
  FULCRUM_RETURN_IF_ERROR(db.Exec(kCreate));
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db.Prepare("INSERT INTO cloud_nodes (node, offer, price_per_hour_usd, billing_seconds, "
                 "started_at, ended_at, state, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
  s.Bind(1, r.node).Bind(2, r.offer).Bind(3, r.price_per_hour_usd).Bind(4, r.billing_seconds);
  s.Bind(5, r.started_at).Bind(6, r.ended_at).Bind(7, r.state).Bind(8, r.reason);
  FULCRUM_RETURN_IF_ERROR(s.Run());
  return db.LastInsertRowId();
}

Status UpdateCloudNode(Database& db, const CloudNodeRecord& r) {
  FULCRUM_RETURN_IF_ERROR(db.Exec(kCreate));
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db.Prepare("UPDATE cloud_nodes SET ended_at = ?, state = ?, reason = ? WHERE id = ?"));
  s.Bind(1, r.ended_at).Bind(2, r.state).Bind(3, r.reason).Bind(4, r.id);
  return s.Run();
}

Result<std::vector<CloudNodeRecord>> ListCloudNodes(Database& db) {
  return Query(db, "ORDER BY id", "");
}

Result<std::optional<CloudNodeRecord>> LatestCloudNode(Database& db, const std::string& node) {
  FULCRUM_ASSIGN_OR_RETURN(auto rows, Query(db, "WHERE node = ? ORDER BY id DESC LIMIT 1", node));
  if (rows.empty()) return std::optional<CloudNodeRecord>();
  return std::optional<CloudNodeRecord>(rows.front());
}

double BilledUsd(const CloudNodeRecord& r, double now) {
  const double end = r.ended_at ? std::min(*r.ended_at, std::max(now, r.started_at)) : now;
  const double ran = std::max(0.0, end - r.started_at);
  // A billing period that has begun is paid in full.
  const double unit = std::max(1.0, r.billing_seconds);
  const double billed = std::ceil(ran / unit - 1e-9) * unit;
  return billed / 3600 * r.price_per_hour_usd;
}

}  // namespace fulcrum::store
