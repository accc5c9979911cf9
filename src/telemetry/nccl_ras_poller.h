// Polls NCCL's RAS status socket (telemetry/nccl_ras.h) on its own thread, every `interval`
// (10 s by default), so that a slow or hung answer never delays sampling; keeps which ranks
// are holding up a communicator and calls them stalled once the same ranks at the same
// operation counts show on `stall_polls` reports in a row (a transient skew between async
// launches does not). No socket is the normal case: silent (one line when one appears or
// goes). Used by the agent (the hang alert) and by `fulcrum run` (--on-hang). Thread-safe:
// Stalled() and present() are read by the sampler / the supervisor's thread.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "telemetry/nccl_ras.h"

namespace fulcrum::telemetry {

struct NcclRasPollerOptions {
  NcclRasQueryOptions query;
  double interval_seconds = 10;
  int stall_polls = 2;  // consecutive reports naming the same ranks at the same counts
  // Where the state changes go (socket answering / gone / not NCCL); unset: spdlog (info for
  // answering and gone, warn for a peer that does not speak the protocol). Called on the
  // poller's thread.
  std::function<void(const std::string&)> note;
};

class NcclRasPoller {
 public:
  explicit NcclRasPoller(NcclRasPollerOptions options) : options_(std::move(options)) {}
  ~NcclRasPoller() { Stop(); }
  NcclRasPoller(const NcclRasPoller&) = delete;
  NcclRasPoller& operator=(const NcclRasPoller&) = delete;

  void Start();  // polls at once, then every interval
  void Stop();   // wakes and joins the thread; a query in flight ends within its timeouts

  // One query and the stall bookkeeping, on the caller's thread (the thread's body).
  void PollOnce();

  // The ranks stalled as of the last report (empty: none, or no RAS socket).
  std::vector<NcclLaggingRank> Stalled() const;
  bool present() const;  // the last query got a report

 private:
  void Loop();
  void Note(const Status& error);

  const NcclRasPollerOptions options_;
  mutable Mutex mutex_;
  CondVar wake_;
  bool stop_ GUARDED_BY(mutex_) = false;
  bool present_ GUARDED_BY(mutex_) = false;
  std::string last_error_ GUARDED_BY(mutex_);
  // "comm/rank/reason" -> consecutive reports it appeared on, and the rank as last seen.
  std::map<std::string, std::pair<int, NcclLaggingRank>> seen_ GUARDED_BY(mutex_);
  std::thread thread_;
};

}  // namespace fulcrum::telemetry
