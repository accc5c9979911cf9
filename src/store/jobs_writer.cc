#include "store/jobs_writer.h"

#include <chrono>

namespace fulcrum::store {
namespace {

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

JobsWriter::JobsWriter(JobsDb& db, Options options) : db_(db), options_(options) {
  thread_ = std::thread([this] { Loop(); });
}

JobsWriter::~JobsWriter() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  changed_.SignalAll();
  thread_.join();
}

void JobsWriter::Post(std::string what, Write write) {
  {
    MutexLock lock(mutex_);
    queue_.push_back({std::move(what), std::move(write)});
  }
  changed_.SignalAll();
}

bool JobsWriter::Flush(double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  MutexLock lock(mutex_);
  while (!queue_.empty()) {
    if (!changed_.WaitUntil(mutex_, deadline) && std::chrono::steady_clock::now() >= deadline) {
      return queue_.empty();
    }
  }
  return true;
}

size_t JobsWriter::Pending() {
  MutexLock lock(mutex_);
  return queue_.size();
}

std::vector<std::string> JobsWriter::TakeNotes() {
  MutexLock lock(mutex_);
  return std::exchange(notes_, {});
}

void JobsWriter::Note(std::string text) {
  MutexLock lock(mutex_);
  notes_.push_back(std::move(text));
}

void JobsWriter::Loop() {
  while (true) {
    Item item;
    {
      MutexLock lock(mutex_);
      while (queue_.empty() && !stopping_) changed_.Wait(mutex_);
      if (stopping_) return;
      item = queue_.front();  // stays queued (and counted by Flush) until done with
    }
    const bool done = RunFront(item);
    {
      MutexLock lock(mutex_);
      if (done) queue_.pop_front();
      if (!done && !stopping_) {
        changed_.WaitFor(mutex_, std::chrono::duration<double>(options_.retry_seconds));
      }
    }
    changed_.SignalAll();
  }
}

bool JobsWriter::RunFront(const Item& item) {
  const Status status = item.write(db_);
  const double now = SteadySeconds();
  if (status.code() == StatusCode::kUnavailable) {
    if (stalled_since_ == 0) {
      stalled_since_ = now;
      last_stall_note_ = now;
      Note("jobs.db (" + db_.db().path() + ") is locked by another process: cannot " + item.what +
           " (" + status.message() + "); the supervisor goes on from memory and " +
           "writes the records once the lock is gone");
    } else if (now - last_stall_note_ >= options_.stall_note_seconds) {
      last_stall_note_ = now;
      Note("jobs.db still locked after " + std::to_string(static_cast<int>(now - stalled_since_)) +
           " s; " + std::to_string(Pending()) + " record(s) wait");
    }
    return false;
  }
  if (stalled_since_ != 0) {
    Note("jobs.db writable again after " +
         std::to_string(static_cast<int>(now - stalled_since_ + 0.5)) + " s");
    stalled_since_ = 0;
  }
  if (!status.ok()) Note("cannot " + item.what + " in jobs.db: " + status.message());
  return true;
}

}  // namespace fulcrum::store
