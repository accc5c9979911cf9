// The supervisor's writer of jobs.db: its decisions (budget, preemption, stop) run from memory,
// and each record of them is queued here and written by this writer's own thread, in order, so
// that a jobs.db that another process holds locked (or a slow disk) delays the record, never the
// decision. A write refused because the file is locked (kUnavailable, SQLite's busy timeout) is
// kept and retried; any other failure is reported and dropped. The stall and its end are
// reported as notes for the owner's thread to log. Post/TakeNotes/Flush are thread-safe.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"
#include "store/jobs.h"

namespace fulcrum::store {

class JobsWriter {
 public:
  using Write = std::function<Status(JobsDb&)>;
  struct Options {
    double retry_seconds = 0.2;      // between tries of a write the lock refused
    double stall_note_seconds = 10;  // a stall is reported at its start and then this often
  };

  // Starts the thread. `db` is used by that thread only until the writer is destroyed (the
  // owner must not touch it meanwhile) and must outlive the writer.
  explicit JobsWriter(JobsDb& db) : JobsWriter(db, Options{}) {}
  JobsWriter(JobsDb& db, Options options);
  // Stops the thread once the write in progress is done; what is still queued is dropped (call
  // Flush first, with the owner's bound, and report Pending()).
  ~JobsWriter();
  JobsWriter(const JobsWriter&) = delete;
  JobsWriter& operator=(const JobsWriter&) = delete;

  // Queues `write` (`what` names it in notes: "update the job", "record spend"). Never waits.
  void Post(std::string what, Write write) EXCLUDES(mutex_);
  // Waits up to `seconds` until every write posted so far is done; false on timeout.
  bool Flush(double seconds) EXCLUDES(mutex_);
  // Writes queued or in progress.
  size_t Pending() EXCLUDES(mutex_);
  // The notes since the last call ("jobs.db is locked by another process ...").
  std::vector<std::string> TakeNotes() EXCLUDES(mutex_);

 private:
  struct Item {
    std::string what;
    Write write;
  };
  void Loop();
  // Runs the front item; true when it is done with (written, or failed for good).
  bool RunFront(const Item& item);
  void Note(std::string text) EXCLUDES(mutex_);

  JobsDb& db_;
  const Options options_;
  Mutex mutex_;
  CondVar changed_;
  std::deque<Item> queue_ GUARDED_BY(mutex_);
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::vector<std::string> notes_ GUARDED_BY(mutex_);
  // The writer thread's own: when the current stall began (monotonic seconds), 0 = none.
  double stalled_since_ = 0;
  double last_stall_note_ = 0;
  std::thread thread_;
};

}  // namespace fulcrum::store
