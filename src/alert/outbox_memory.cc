#include "alert/outbox_memory.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <utility>

namespace fulcrum::alert {
namespace {

// How often FallbackOutbox tries the store again while it holds notifications in memory, and how
// often it logs the store's refusal (issue 29: a full disk logged 10 lines a second).
constexpr double kRestoreEverySeconds = 1;
constexpr double kLogEverySeconds = 60;

}  // namespace

// --- MemoryOutbox ---------------------------------------------------------------------------

Status MemoryOutbox::Insert(const Notification& notification, int64_t sequence) {
  if (notification.id.empty()) return Status::InvalidInput("outbox: notification without id");
  if (entries_.count(notification.id) > 0) return Status::Ok();
  Entry entry;
  entry.notification = notification;
  entry.sequence = sequence;
  entries_.emplace(notification.id, std::move(entry));
  return Status::Ok();
}

Status MemoryOutbox::Enqueue(const Notification& notification) {
  MutexLock lock(mutex_);
  Status st = Insert(notification, next_sequence_);
  if (st.ok()) ++next_sequence_;
  return st;
}

Status MemoryOutbox::EnqueueFirst(const Notification& notification) {
  MutexLock lock(mutex_);
  Status st = Insert(notification, next_first_sequence_);
  if (st.ok()) --next_first_sequence_;
  return st;
}

Result<std::vector<Notification>> MemoryOutbox::FetchDue(double now_mono, size_t limit,
                                                         const std::string& receiver) {
  MutexLock lock(mutex_);
  // The first pending entry of each (receiver, order_key): only it may go.
  std::map<std::pair<std::string, std::string>, int64_t> head;
  for (const auto& [id, entry] : entries_) {
    if (entry.state != DeliveryState::kPending || entry.notification.order_key.empty()) continue;
    auto key = std::make_pair(entry.notification.receiver, entry.notification.order_key);
    auto [it, added] = head.emplace(key, entry.sequence);
    if (!added) it->second = std::min(it->second, entry.sequence);
  }
  std::vector<const Entry*> due;
  for (const auto& [id, entry] : entries_) {
    const Notification& n = entry.notification;
    if (entry.state != DeliveryState::kPending || n.due_mono > now_mono ||
        (!receiver.empty() && n.receiver != receiver)) {
      continue;
    }
    if (!n.order_key.empty() && head[{n.receiver, n.order_key}] != entry.sequence) continue;
    due.push_back(&entry);
  }
  std::sort(due.begin(), due.end(),
            [](const Entry* a, const Entry* b) { return a->sequence < b->sequence; });
  if (due.size() > limit) due.resize(limit);
  std::vector<Notification> out;
  out.reserve(due.size());
  for (const Entry* entry : due) out.push_back(entry->notification);
  return out;
}

Status MemoryOutbox::MarkDelivered(const std::string& id, double delivered_at) {
  MutexLock lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return Status::NotFound("outbox: no notification '" + id + "'");
  it->second.state = DeliveryState::kDelivered;
  it->second.delivered_at = delivered_at;
  it->second.notification.attempts += 1;  // the successful POST counts too
  return Status::Ok();
}

Status MemoryOutbox::ScheduleRetry(const Notification& n) {
  MutexLock lock(mutex_);
  auto it = entries_.find(n.id);
  if (it == entries_.end()) return Status::NotFound("outbox: no notification '" + n.id + "'");
  if (it->second.state != DeliveryState::kPending) return Status::Ok();
  Notification& stored = it->second.notification;
  stored.attempts = n.attempts;
  stored.next_attempt_at = n.next_attempt_at;
  stored.last_error = n.last_error;
  stored.due_mono = n.due_mono;
  stored.age_seconds = n.age_seconds;
  stored.touched_mono = n.touched_mono;
  return Status::Ok();
}

Status MemoryOutbox::MarkFailed(const std::string& id, int attempts, const std::string& error) {
  MutexLock lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return Status::NotFound("outbox: no notification '" + id + "'");
  it->second.state = DeliveryState::kFailed;
  it->second.notification.attempts = attempts;
  it->second.notification.last_error = error;
  return Status::Ok();
}

Result<size_t> MemoryOutbox::PendingCount() {
  MutexLock lock(mutex_);
  return static_cast<size_t>(std::count_if(entries_.begin(), entries_.end(), [](const auto& kv) {
    return kv.second.state == DeliveryState::kPending;
  }));
}

Result<std::vector<std::string>> MemoryOutbox::PendingIds(const std::string& receiver,
                                                          const std::string& order_key) {
  std::vector<std::string> ids;
  for (const Notification& n : PendingInOrder()) {
    if (n.receiver == receiver && n.order_key == order_key) ids.push_back(n.id);
  }
  return ids;
}

Status MemoryOutbox::Rebase(double now_mono) {
  MutexLock lock(mutex_);
  for (auto& [id, entry] : entries_) {
    if (entry.state != DeliveryState::kPending) continue;
    entry.notification.due_mono = now_mono;
    if (entry.notification.touched_mono >= 0) entry.notification.touched_mono = now_mono;
  }
  return Status::Ok();
}

Result<DeliveryState> MemoryOutbox::StateOf(const std::string& id) {
  MutexLock lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return Status::NotFound("outbox: no notification '" + id + "'");
  return it->second.state;
}

Result<Notification> MemoryOutbox::Get(const std::string& id) {
  MutexLock lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return Status::NotFound("outbox: no notification '" + id + "'");
  return it->second.notification;
}

std::vector<Notification> MemoryOutbox::PendingInOrder() {
  MutexLock lock(mutex_);
  std::vector<const Entry*> pending;
  for (const auto& [id, entry] : entries_) {
    if (entry.state == DeliveryState::kPending) pending.push_back(&entry);
  }
  std::sort(pending.begin(), pending.end(),
            [](const Entry* a, const Entry* b) { return a->sequence < b->sequence; });
  std::vector<Notification> out;
  out.reserve(pending.size());
  for (const Entry* entry : pending) out.push_back(entry->notification);
  return out;
}

bool MemoryOutbox::Contains(const std::string& id) {
  MutexLock lock(mutex_);
  return entries_.count(id) > 0;
}

void MemoryOutbox::Erase(const std::string& id) {
  MutexLock lock(mutex_);
  entries_.erase(id);
}

// --- FallbackOutbox -------------------------------------------------------------------------

FallbackOutbox::FallbackOutbox(Outbox& durable, const Clock& clock,
                               std::shared_ptr<spdlog::logger> logger)
    : durable_(durable),
      clock_(clock),
      logger_(logger ? std::move(logger) : spdlog::default_logger()) {}

void FallbackOutbox::NoteStoreError(const Status& status, const char* what) {
  store_error_ = status.ToString();
  const double now = clock_.MonotonicSeconds();
  store_error_mono_ = now;
  last_restore_mono_ = now;  // a refusal counts as a try: the next is a second away
  if (now - last_log_mono_ < kLogEverySeconds) {
    ++unlogged_errors_;
    return;
  }
  logger_->error(
      "alert outbox: the store refused to {} ({}); alerts are delivered from memory until it "
      "works again{}",
      what, store_error_,
      unlogged_errors_ > 0 ? fmt::format(" ({} more refusals in the last {:.0f} s)",
                                         unlogged_errors_, kLogEverySeconds)
                           : std::string());
  last_log_mono_ = now;
  unlogged_errors_ = 0;
}

bool FallbackOutbox::Finished(const std::string& id) const {
  auto it = unsaved_.find(id);
  return it != unsaved_.end() && it->second.state != DeliveryState::kPending;
}

Status FallbackOutbox::Apply(const std::string& id, const Unsaved& update) {
  switch (update.state) {
    case DeliveryState::kDelivered:
      return durable_.MarkDelivered(id, update.delivered_at);
    case DeliveryState::kFailed:
      return durable_.MarkFailed(id, update.attempts, update.error);
    case DeliveryState::kPending:
      return durable_.ScheduleRetry(update.notification);
  }
  return Status::Ok();
}

void FallbackOutbox::Update(const std::string& id, Unsaved update) {
  unsaved_.erase(id);  // a newer update replaces an unsaved one
  Status st = Apply(id, update);
  if (st.ok()) return;
  NoteStoreError(st, "record a delivery attempt");
  unsaved_[id] = std::move(update);
}

void FallbackOutbox::Restore(bool force) {
  if (unsaved_.empty() && memory_.PendingInOrder().empty()) return;
  const double now = clock_.MonotonicSeconds();
  if (!force && now - last_restore_mono_ < kRestoreEverySeconds) return;
  last_restore_mono_ = now;
  for (auto it = unsaved_.begin(); it != unsaved_.end();) {
    if (!Apply(it->first, it->second).ok()) return;
    it = unsaved_.erase(it);
  }
  size_t moved = 0;
  for (const Notification& n : memory_.PendingInOrder()) {
    if (!durable_.Enqueue(n).ok()) return;  // in order: the rest stay in memory
    memory_.Erase(n.id);
    first_.erase(n.id);
    ++moved;
  }
  logger_->info("alert outbox: the store takes writes again; {} notification(s) moved from memory",
                moved);
  store_error_.clear();
  store_error_mono_ = -1;
}

Status FallbackOutbox::Enqueue(const Notification& notification) {
  MutexLock lock(mutex_);
  Restore(/*force=*/false);
  // While memory holds notifications, new ones join them: an alert's resolved never reaches the
  // store (and its receiver) ahead of its firing held in memory.
  if (memory_.PendingInOrder().empty()) {
    Status st = durable_.Enqueue(notification);
    if (st.ok()) return st;
    NoteStoreError(st, "store a notification");
  }
  return memory_.Enqueue(notification);
}

Status FallbackOutbox::EnqueueFirst(const Notification& notification) {
  MutexLock lock(mutex_);
  first_.insert(notification.id);
  return memory_.EnqueueFirst(notification);
}

FallbackOutbox::StoreRefusal FallbackOutbox::LastStoreRefusal() {
  MutexLock lock(mutex_);
  return {store_error_, store_error_mono_};
}

Result<std::vector<Notification>> FallbackOutbox::FetchDue(double now_mono, size_t limit,
                                                           const std::string& receiver) {
  MutexLock lock(mutex_);
  Restore(/*force=*/false);
  std::vector<Notification> out;
  auto stored = durable_.FetchDue(now_mono, limit + unsaved_.size(), receiver);
  if (!stored.ok()) {
    NoteStoreError(stored.status(), "read the outbox");
  } else {
    for (Notification& n : *stored) {
      auto update = unsaved_.find(n.id);
      if (update != unsaved_.end()) {
        if (update->second.state != DeliveryState::kPending) continue;  // done, not yet saved
        n = update->second.notification;
        if (n.due_mono > now_mono) continue;
      }
      out.push_back(std::move(n));
    }
  }
  auto held = memory_.FetchDue(now_mono, limit, receiver);
  if (!held.ok()) return held.status();
  for (Notification& n : *held) {
    if (!n.order_key.empty()) {
      // Memory holds only notifications newer than the store's: one waits while its alert has
      // an earlier one pending in the store.
      auto ids = durable_.PendingIds(n.receiver, n.order_key);
      if (!ids.ok()) {
        NoteStoreError(ids.status(), "read the outbox");
      } else {
        bool earlier_pending = false;
        for (const std::string& id : *ids) earlier_pending = earlier_pending || !Finished(id);
        if (earlier_pending) continue;
      }
    }
    out.push_back(std::move(n));
  }
  // EnqueueFirst's notifications go before the store's.
  std::vector<Notification> ordered, rest;
  for (Notification& n : out) (first_.count(n.id) > 0 ? ordered : rest).push_back(std::move(n));
  for (Notification& n : rest) ordered.push_back(std::move(n));
  if (ordered.size() > limit) ordered.resize(limit);
  return ordered;
}

Status FallbackOutbox::MarkDelivered(const std::string& id, double delivered_at) {
  MutexLock lock(mutex_);
  if (memory_.Contains(id)) {
    memory_.Erase(id);
    first_.erase(id);
    return Status::Ok();
  }
  Unsaved update;
  update.state = DeliveryState::kDelivered;
  update.delivered_at = delivered_at;
  Update(id, std::move(update));
  return Status::Ok();
}

Status FallbackOutbox::ScheduleRetry(const Notification& n) {
  MutexLock lock(mutex_);
  if (memory_.Contains(n.id)) return memory_.ScheduleRetry(n);
  Unsaved update;
  update.notification = n;
  Update(n.id, std::move(update));
  return Status::Ok();
}

Status FallbackOutbox::MarkFailed(const std::string& id, int attempts, const std::string& error) {
  MutexLock lock(mutex_);
  if (memory_.Contains(id)) {
    memory_.Erase(id);
    first_.erase(id);
    return Status::Ok();
  }
  Unsaved update;
  update.state = DeliveryState::kFailed;
  update.attempts = attempts;
  update.error = error;
  Update(id, std::move(update));
  return Status::Ok();
}

Result<size_t> FallbackOutbox::PendingCount() {
  MutexLock lock(mutex_);
  FULCRUM_ASSIGN_OR_RETURN(size_t held, memory_.PendingCount());
  auto stored = durable_.PendingCount();
  if (!stored.ok()) return held;
  size_t finished = 0;
  for (const auto& [id, update] : unsaved_) finished += update.state != DeliveryState::kPending;
  return held + (*stored > finished ? *stored - finished : 0);
}

Result<std::vector<std::string>> FallbackOutbox::PendingIds(const std::string& receiver,
                                                            const std::string& order_key) {
  MutexLock lock(mutex_);
  std::vector<std::string> ids;
  auto stored = durable_.PendingIds(receiver, order_key);
  if (stored.ok()) {
    for (std::string& id : *stored) {
      if (!Finished(id)) ids.push_back(std::move(id));
    }
  }
  FULCRUM_ASSIGN_OR_RETURN(std::vector<std::string> held, memory_.PendingIds(receiver, order_key));
  ids.insert(ids.end(), held.begin(), held.end());
  return ids;
}

Status FallbackOutbox::Rebase(double now_mono) {
  MutexLock lock(mutex_);
  for (auto& [id, update] : unsaved_) {
    if (update.state != DeliveryState::kPending) continue;
    update.notification.due_mono = now_mono;
    if (update.notification.touched_mono >= 0) update.notification.touched_mono = now_mono;
  }
  Status st = durable_.Rebase(now_mono);
  if (!st.ok()) NoteStoreError(st, "rebase the outbox's schedule");
  return memory_.Rebase(now_mono);
}

std::string FallbackOutbox::DegradedReason() {
  MutexLock lock(mutex_);
  auto held = memory_.PendingCount();
  const size_t in_memory = held.ok() ? *held : 0;
  if (in_memory == 0 && unsaved_.empty()) return "";
  return fmt::format(
      "alert outbox: the store refuses writes ({}); {} notification(s) and {} delivery update(s) "
      "are held in memory only and delivered from there",
      store_error_.empty() ? "unknown error" : store_error_, in_memory, unsaved_.size());
}

}  // namespace fulcrum::alert
