// The agent's own `disk_full` alert (issue 29: checkpoints filling the disk is exactly when an
// alert matters). It fires on the first store refusal that says the data disk is full and
// resolves on the first store write that succeeds after it; the agent sends its firing ahead of
// every other pending notification (alert/outbox_memory.h FallbackOutbox::EnqueueFirst), so it
// is the first thing receivers hear of a full disk. A host-wide alert (gpu -1), like the idle
// warning. Not thread-safe: the agent's sampler thread owns it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "alert/evaluator.h"

namespace fulcrum::agent {

// The alert's name, as receivers and /v1/alerts show it.
inline constexpr const char* kDiskFullAlert = "disk_full";

// Whether a store error says the disk is full: SQLite's message for SQLITE_FULL ("database or
// disk is full", sqlite3.c sqlite3ErrStr) or strerror(ENOSPC) ("No space left on device").
bool IsDiskFull(std::string_view error);

class DiskFullAlert {
 public:
  DiskFullAlert(std::string hostname, std::string data_dir);
  // The store refused a write with `error` at unix time `now`: the firing transition when the
  // error says the disk is full and the alert is not firing yet; nullopt otherwise.
  std::optional<alert::Transition> Refused(std::string_view error, double now);
  // A store write succeeded at unix time `now`: the resolved transition while it was firing.
  std::optional<alert::Transition> Stored(double now);
  bool firing() const { return fired_at_ > 0; }
  // Why the agent runs degraded while it fires (the firing's summary); "" otherwise.
  const std::string& reason() const { return reason_; }

 private:
  alert::Transition Make(alert::AlertStatus from, alert::AlertStatus to, double now,
                         const std::string& summary) const;
  std::string hostname_;
  std::string data_dir_;
  double fired_at_ = 0;  // unix seconds; 0 while not firing
  std::string reason_;
};

}  // namespace fulcrum::agent
