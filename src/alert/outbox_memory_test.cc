// FallbackOutbox (issue 29): a full data disk muted every alert, because notifications were
// written to the store before they were sent. These tests put a store that refuses writes the way
// SQLite does on a full disk (SQLITE_FULL, "database or disk is full": sqlite3.c, sqlite3ErrStr)
// under the agent's outbox and check that alerts still go out, in order, and come back to the
// store once it takes writes again.
#include "alert/outbox_memory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <sstream>
#include <thread>

#include "alert/delivery.h"
#include "support/fake_http_server.h"

namespace fulcrum::alert {
namespace {

using ::testing::HasSubstr;

// A store whose writes fail with SQLite's full-disk error while `full` is set; reads work (as
// they do on a full disk).
class FullDiskStore final : public Outbox {
 public:
  std::atomic<bool> full{false};
  MemoryOutbox rows;

  Status Enqueue(const Notification& n) override {
    return Write([&] { return rows.Enqueue(n); });
  }
  Result<std::vector<Notification>> FetchDue(double now, size_t limit,
                                             const std::string& receiver) override {
    return rows.FetchDue(now, limit, receiver);
  }
  Status MarkDelivered(const std::string& id, double at) override {
    return Write([&] { return rows.MarkDelivered(id, at); });
  }
  Status ScheduleRetry(const Notification& n) override {
    return Write([&] { return rows.ScheduleRetry(n); });
  }
  Status MarkFailed(const std::string& id, int attempts, const std::string& error) override {
    return Write([&] { return rows.MarkFailed(id, attempts, error); });
  }
  Result<size_t> PendingCount() override { return rows.PendingCount(); }
  Result<std::vector<std::string>> PendingIds(const std::string& receiver,
                                              const std::string& key) override {
    return rows.PendingIds(receiver, key);
  }
  Status Rebase(double now) override {
    return Write([&] { return rows.Rebase(now); });
  }

 private:
  template <typename F>
  Status Write(F write) {
    if (full) return Status::Internal("agent.db: database or disk is full");
    return write();
  }
};

Notification Note(const std::string& id, const std::string& key = "") {
  Notification n;
  n.id = id;
  n.receiver = "ops";
  n.format = "generic";
  n.body = R"({"id": ")" + id + R"("})";
  n.order_key = key;
  return n;
}

struct CapturedLog {
  std::ostringstream stream;
  std::shared_ptr<spdlog::logger> logger;
  CapturedLog() {
    logger = std::make_shared<spdlog::logger>(
        "outbox-test", std::make_shared<spdlog::sinks::ostream_sink_mt>(stream));
    logger->set_level(spdlog::level::trace);
  }
  std::string Text() {
    logger->flush();
    return stream.str();
  }
};

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The issue's case end to end in one process: the store refuses every write; the notification
// still reaches a loopback receiver (within the 2 s the issue asks for), the outbox says why it
// is degraded, and 50 refusals log one line.
TEST(FallbackOutboxTest, AFullDiskStillDeliversFromMemory) {
  std::mutex mutex;
  std::vector<std::string> keys;
  fulcrum::testing::FakeHttpServer receiver;
  receiver.server().Post("/hook", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mutex);
    keys.push_back(req.get_header_value("Idempotency-Key"));
    res.set_content("{}", "application/json");
  });
  ASSERT_GT(receiver.Start(), 0);
  auto received = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    return keys;
  };

  FullDiskStore store;
  store.full = true;
  SystemClock clock;
  CapturedLog log;
  FallbackOutbox outbox(store, clock, log.logger);
  CurlPoster poster;
  DeliveryOptions options;
  options.idle_poll_seconds = 0.05;
  DeliveryWorker worker(outbox, poster,
                        {{"ops", receiver.url() + "/hook", ReceiverFormat::kGeneric, ""}}, clock,
                        options, log.logger);
  worker.Start();
  const auto enqueued = std::chrono::steady_clock::now();
  ASSERT_TRUE(outbox.Enqueue(Note("disk-alert")).ok());
  worker.Wake();
  while (received().empty() &&
         std::chrono::steady_clock::now() - enqueued < std::chrono::seconds(2)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(received(), std::vector<std::string>{"disk-alert"}) << log.Text();
  EXPECT_TRUE(store.rows.PendingInOrder().empty());  // the store never had it

  for (int i = 0; i < 50; ++i) ASSERT_TRUE(outbox.Enqueue(Note("more" + std::to_string(i))).ok());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (received().size() < 51 && std::chrono::steady_clock::now() < deadline) {
    worker.Wake();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  worker.Stop();
  EXPECT_EQ(received().size(), 51u);
  EXPECT_EQ(Count(log.Text(), "the store refused"), 1u) << log.Text();  // rate-limited
}

TEST(FallbackOutboxTest, DegradedReasonNamesTheStoreErrorUntilTheStoreTakesThemBack) {
  FullDiskStore store;
  ManualClock clock;
  CapturedLog log;
  FallbackOutbox outbox(store, clock, log.logger);
  ASSERT_TRUE(outbox.Enqueue(Note("a")).ok());
  EXPECT_EQ(outbox.DegradedReason(), "");
  store.full = true;
  ASSERT_TRUE(outbox.Enqueue(Note("b")).ok());
  EXPECT_THAT(outbox.DegradedReason(), HasSubstr("database or disk is full"));
  EXPECT_THAT(outbox.DegradedReason(), HasSubstr("1 notification(s)"));
  EXPECT_EQ(*outbox.PendingCount(), 2u);
  store.full = false;
  ASSERT_TRUE(outbox.Enqueue(Note("c")).ok());  // within a second of the last try: joins memory
  EXPECT_THAT(outbox.DegradedReason(), HasSubstr("2 notification(s)"));
  clock.Advance(1.5);
  auto due = outbox.FetchDue(clock.MonotonicSeconds(), 10, "ops");  // tries the store again
  ASSERT_TRUE(due.ok());
  EXPECT_EQ(outbox.DegradedReason(), "");
  std::vector<std::string> stored;
  for (const Notification& n : store.rows.PendingInOrder()) stored.push_back(n.id);
  EXPECT_EQ(stored, (std::vector<std::string>{"a", "b", "c"}));  // in enqueue order
  EXPECT_THAT(log.Text(), HasSubstr("takes writes again; 2 notification(s) moved from memory"));
}

// An alert fired (stored), the disk filled, it resolved (memory only): the resolved waits for
// the firing, and goes once the firing is delivered even though the store cannot record that.
TEST(FallbackOutboxTest, AnAlertsResolvedInMemoryWaitsForItsFiringInTheStore) {
  FullDiskStore store;
  ManualClock clock;
  CapturedLog log;
  FallbackOutbox outbox(store, clock, log.logger);
  ASSERT_TRUE(outbox.Enqueue(Note("firing", "hot")).ok());
  Notification firing = *store.rows.Get("firing");
  firing.attempts = 1;
  firing.due_mono = 5;  // in backoff
  ASSERT_TRUE(outbox.ScheduleRetry(firing).ok());
  store.full = true;
  ASSERT_TRUE(outbox.Enqueue(Note("resolved", "hot")).ok());
  ASSERT_TRUE(outbox.Enqueue(Note("other", "xid")).ok());
  auto due = outbox.FetchDue(1, 10, "ops");
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].id, "other");
  ASSERT_TRUE(outbox.MarkDelivered("other", 1).ok());
  due = outbox.FetchDue(6, 10, "ops");
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].id, "firing");
  ASSERT_TRUE(outbox.MarkDelivered("firing", 6).ok());  // the store refuses: remembered
  EXPECT_EQ(*store.rows.StateOf("firing"), DeliveryState::kPending);
  due = outbox.FetchDue(6, 10, "ops");
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].id, "resolved");  // not the firing again
  ASSERT_TRUE(outbox.MarkDelivered("resolved", 6).ok());
  EXPECT_TRUE(outbox.FetchDue(7, 10, "ops")->empty());
  EXPECT_EQ(*outbox.PendingCount(), 0u);
  store.full = false;
  clock.Advance(2);
  EXPECT_TRUE(outbox.FetchDue(8, 10, "ops")->empty());
  EXPECT_EQ(*store.rows.StateOf("firing"), DeliveryState::kDelivered);  // saved at last
  EXPECT_EQ(outbox.DegradedReason(), "");
}

// The agent's own disk_full alert goes out first: ahead of what the store holds and of what
// memory held before it, and it reports the store's refusal that set it off.
TEST(FallbackOutboxTest, EnqueueFirstGoesAheadOfStoredAndHeldNotifications) {
  FullDiskStore store;
  ManualClock clock;
  CapturedLog log;
  FallbackOutbox outbox(store, clock, log.logger);
  ASSERT_TRUE(outbox.Enqueue(Note("stored", "a")).ok());
  EXPECT_LT(outbox.LastStoreRefusal().at_mono, 0);
  store.full = true;
  clock.Advance(3);
  ASSERT_TRUE(outbox.Enqueue(Note("held", "b")).ok());
  const auto refusal = outbox.LastStoreRefusal();
  EXPECT_THAT(refusal.error, HasSubstr("database or disk is full"));
  EXPECT_DOUBLE_EQ(refusal.at_mono, clock.MonotonicSeconds());
  ASSERT_TRUE(outbox.EnqueueFirst(Note("disk_full", "disk")).ok());
  ASSERT_TRUE(outbox.Enqueue(Note("later", "c")).ok());
  auto due = outbox.FetchDue(clock.MonotonicSeconds(), 10, "ops");
  ASSERT_TRUE(due.ok());
  std::vector<std::string> order;
  for (const Notification& n : *due) order.push_back(n.id);
  EXPECT_EQ(order, (std::vector<std::string>{"disk_full", "stored", "held", "later"}));
  // The limit keeps it too.
  due = outbox.FetchDue(clock.MonotonicSeconds(), 1, "ops");
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].id, "disk_full");
  // Once the store works again it moves there first, in its place.
  store.full = false;
  clock.Advance(2);
  ASSERT_TRUE(outbox.FetchDue(clock.MonotonicSeconds(), 10, "ops").ok());
  std::vector<std::string> stored;
  for (const Notification& n : store.rows.PendingInOrder()) stored.push_back(n.id);
  EXPECT_EQ(stored, (std::vector<std::string>{"stored", "disk_full", "held", "later"}));
  EXPECT_LT(outbox.LastStoreRefusal().at_mono, 0);
  EXPECT_EQ(outbox.DegradedReason(), "");
}

TEST(MemoryOutboxTest, EnqueueFirstIsDeliveredBeforeEarlierOnes) {
  MemoryOutbox outbox;
  ASSERT_TRUE(outbox.Enqueue(Note("a")).ok());
  ASSERT_TRUE(outbox.EnqueueFirst(Note("first")).ok());
  ASSERT_TRUE(outbox.EnqueueFirst(Note("first")).ok());  // an existing id: no change
  ASSERT_TRUE(outbox.Enqueue(Note("b")).ok());
  auto due = outbox.FetchDue(0, 10, "ops");
  ASSERT_TRUE(due.ok());
  std::vector<std::string> order;
  for (const Notification& n : *due) order.push_back(n.id);
  EXPECT_EQ(order, (std::vector<std::string>{"first", "a", "b"}));
}

}  // namespace
}  // namespace fulcrum::alert
