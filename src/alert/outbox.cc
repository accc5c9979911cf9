#include "alert/outbox.h"

#include <algorithm>

namespace fulcrum::alert {

Status MemoryOutbox::Enqueue(const Notification& notification) {
  if (notification.id.empty()) return Status::InvalidInput("outbox: notification without id");
  MutexLock lock(mutex_);
  if (entries_.count(notification.id) > 0) return Status::Ok();
  Entry entry;
  entry.notification = notification;
  entry.sequence = next_sequence_++;
  entries_.emplace(notification.id, std::move(entry));
  return Status::Ok();
}

Result<std::vector<Notification>> MemoryOutbox::FetchDue(double now, size_t limit,
                                                         const std::string& receiver) {
  MutexLock lock(mutex_);
  std::vector<const Entry*> due;
  for (const auto& [id, entry] : entries_) {
    if (entry.state == DeliveryState::kPending && entry.notification.next_attempt_at <= now &&
        (receiver.empty() || entry.notification.receiver == receiver)) {
      due.push_back(&entry);
    }
  }
  std::sort(due.begin(), due.end(), [](const Entry* a, const Entry* b) {
    if (a->notification.created_at != b->notification.created_at) {
      return a->notification.created_at < b->notification.created_at;
    }
    return a->sequence < b->sequence;
  });
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

Status MemoryOutbox::ScheduleRetry(const std::string& id, int attempts, double next_attempt_at,
                                   const std::string& error) {
  MutexLock lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return Status::NotFound("outbox: no notification '" + id + "'");
  it->second.notification.attempts = attempts;
  it->second.notification.next_attempt_at = next_attempt_at;
  it->second.notification.last_error = error;
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

}  // namespace fulcrum::alert
