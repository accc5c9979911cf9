#include "alert/delivery.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "alert/evaluator.h"
#include "alert/notify_send.h"
#include "alert/rules_yaml.h"
#include "support/fake_http_server.h"
#include "support/vendor_signatures.h"

namespace fulcrum::alert {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// --- helpers ----------------------------------------------------------------------------------

Notification MakeNote(const std::string& id, const std::string& receiver, double created_at) {
  Notification n;
  n.id = id;
  n.receiver = receiver;
  n.format = "generic";
  n.body = R"({"id": ")" + id + R"("})";
  n.created_at = created_at;
  n.next_attempt_at = created_at;
  return n;
}

Receiver Plain(const std::string& name, const std::string& url) {
  return {name, url, ReceiverFormat::kGeneric, ""};
}

// Scripted HttpPoster: answers `status_for(request)`; records every request.
class FakePoster final : public HttpPoster {
 public:
  std::function<int(const HttpRequest&)> status_for = [](const HttpRequest&) { return 200; };
  std::function<std::string(const HttpRequest&)> body_for = [](const HttpRequest&) {
    return std::string("{}");
  };
  std::vector<HttpRequest> requests;
  HttpResponse Post(const HttpRequest& request) override {
    requests.push_back(request);
    HttpResponse response;
    response.status = status_for(request);
    response.body = body_for(request);
    if (response.status == 0) response.error = "Couldn't connect to server";
    return response;
  }
};

std::string HeaderOf(const HttpRequest& request, const std::string& name) {
  for (const auto& [key, value] : request.headers) {
    if (key == name) return value;
  }
  return "";
}

// A logger that writes into a string, to check what delivery logs.
struct CapturedLog {
  std::ostringstream stream;
  std::shared_ptr<spdlog::logger> logger;
  CapturedLog() {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream);
    logger = std::make_shared<spdlog::logger>("alert-test", sink);
    logger->set_level(spdlog::level::trace);
  }
  std::string Text() {
    logger->flush();
    return stream.str();
  }
};

// --- backoff and the pass logic, with a fake poster and a manual clock -----------------------

TEST(DeliveryTest, BackoffIsExponentialAndCapped) {
  DeliveryOptions options;  // 1 s, x2, cap 30 s
  EXPECT_DOUBLE_EQ(BackoffSeconds(options, 1), 1);
  EXPECT_DOUBLE_EQ(BackoffSeconds(options, 2), 2);
  EXPECT_DOUBLE_EQ(BackoffSeconds(options, 5), 16);
  EXPECT_DOUBLE_EQ(BackoffSeconds(options, 6), 30);
  EXPECT_DOUBLE_EQ(BackoffSeconds(options, 60), 30);
}

TEST(DeliveryTest, DeliversWithHeadersAndMarksDelivered) {
  ManualClock clock;
  MemoryOutbox outbox;
  FakePoster poster;
  CapturedLog log;
  std::vector<Receiver> receivers = {
      {"ops", "https://hooks.example/T/SECRETPATH", ReceiverFormat::kGeneric, "TOKEN123"}};
  DeliveryWorker worker(outbox, poster, receivers, clock, DeliveryOptions{}, log.logger);
  ASSERT_TRUE(outbox.Enqueue(MakeNote("k1:ops", "ops", clock.UnixSeconds())).ok());
  auto pass = worker.RunOnce();
  ASSERT_TRUE(pass.ok());
  EXPECT_EQ(pass->delivered, 1u);
  ASSERT_EQ(poster.requests.size(), 1u);
  const HttpRequest& request = poster.requests[0];
  EXPECT_EQ(request.url, "https://hooks.example/T/SECRETPATH");
  EXPECT_EQ(request.body, R"({"id": "k1:ops"})");
  EXPECT_EQ(HeaderOf(request, "Idempotency-Key"), "k1:ops");
  EXPECT_EQ(HeaderOf(request, "Content-Type"), "application/json");
  EXPECT_EQ(HeaderOf(request, "Authorization"), "Bearer TOKEN123");
  EXPECT_EQ(*outbox.StateOf("k1:ops"), DeliveryState::kDelivered);
  EXPECT_THAT(log.Text(), HasSubstr("delivered"));
  EXPECT_THAT(log.Text(), Not(HasSubstr("SECRETPATH")));
  EXPECT_THAT(log.Text(), Not(HasSubstr("TOKEN123")));
}

TEST(DeliveryTest, RetriesWithJitteredBackoffThenDelivers) {
  ManualClock clock;
  MemoryOutbox outbox;
  FakePoster poster;
  int calls = 0;
  poster.status_for = [&](const HttpRequest&) { return ++calls <= 2 ? 503 : 200; };
  DeliveryOptions options;
  options.seed = 7;
  DeliveryWorker worker(outbox, poster, {Plain("ops", "http://127.0.0.1:1/x")}, clock, options);
  ASSERT_TRUE(outbox.Enqueue(MakeNote("k", "ops", clock.UnixSeconds())).ok());

  ASSERT_EQ(worker.RunOnce()->retried, 1u);
  Notification n = *outbox.Get("k");
  EXPECT_EQ(n.attempts, 1);
  EXPECT_EQ(n.last_error, "HTTP 503");
  double delay = n.next_attempt_at - clock.UnixSeconds();
  EXPECT_GE(delay, 0.8);  // 1 s +- 20 %
  EXPECT_LE(delay, 1.2);
  EXPECT_EQ(worker.RunOnce()->attempted, 0u);  // not due yet

  clock.Advance(1.25);
  ASSERT_EQ(worker.RunOnce()->retried, 1u);
  n = *outbox.Get("k");
  EXPECT_EQ(n.attempts, 2);
  delay = n.next_attempt_at - clock.UnixSeconds();
  EXPECT_GE(delay, 1.6);  // 2 s +- 20 %
  EXPECT_LE(delay, 2.4);

  clock.Advance(2.5);
  ASSERT_EQ(worker.RunOnce()->delivered, 1u);
  EXPECT_EQ(*outbox.StateOf("k"), DeliveryState::kDelivered);
  EXPECT_EQ(poster.requests.size(), 3u);
}

TEST(DeliveryTest, PermanentClientErrorsFailRetryableOnesDoNot) {
  ManualClock clock;
  MemoryOutbox outbox;
  FakePoster poster;
  poster.status_for = [](const HttpRequest& r) {
    return r.url.find("/bad") != std::string::npos ? 404 : 429;
  };
  DeliveryWorker worker(
      outbox, poster,
      {Plain("bad", "http://127.0.0.1:1/bad"), Plain("busy", "http://127.0.0.1:1/busy")}, clock,
      DeliveryOptions{});
  ASSERT_TRUE(outbox.Enqueue(MakeNote("a", "bad", clock.UnixSeconds())).ok());
  ASSERT_TRUE(outbox.Enqueue(MakeNote("b", "busy", clock.UnixSeconds())).ok());
  auto pass = worker.RunOnce();
  EXPECT_EQ(pass->failed, 1u);
  EXPECT_EQ(pass->retried, 1u);
  EXPECT_EQ(*outbox.StateOf("a"), DeliveryState::kFailed);
  EXPECT_EQ(*outbox.StateOf("b"), DeliveryState::kPending);
}

// Issue 15: Feishu, DingTalk and WeCom answer HTTP 200 with an error code in the body; any 2xx
// counted as delivered, so those alerts were silently lost. Now such an answer is retried with
// the receiver's backoff, and failed for good with the vendor's message once the attempts reach
// max_vendor_error_attempts.
TEST(DeliveryTest, VendorErrorIn200BodyIsRetriedThenFailedWithTheVendorsMessage) {
  ManualClock clock;
  MemoryOutbox outbox;
  FakePoster poster;
  CapturedLog log;
  poster.body_for = [](const HttpRequest&) {
    return std::string(R"({"errcode":93000,"errmsg":"invalid webhook url"})");
  };
  DeliveryOptions options;
  options.max_vendor_error_attempts = 3;
  DeliveryWorker worker(outbox, poster,
                        {{"wecom", "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=K",
                          ReceiverFormat::kWeCom, ""}},
                        clock, options, log.logger);
  ASSERT_TRUE(outbox.Enqueue(MakeNote("k", "wecom", clock.UnixSeconds())).ok());
  for (int attempt = 1; attempt <= 2; ++attempt) {
    auto pass = worker.RunOnce();
    ASSERT_TRUE(pass.ok());
    EXPECT_EQ(pass->delivered, 0u) << attempt;
    EXPECT_EQ(pass->retried, 1u) << attempt;
    EXPECT_EQ(*outbox.StateOf("k"), DeliveryState::kPending);
    EXPECT_EQ(outbox.Get("k")->last_error, "wecom errcode 93000: invalid webhook url");
    clock.Advance(60);
  }
  auto last = worker.RunOnce();
  EXPECT_EQ(last->failed, 1u);
  EXPECT_EQ(*outbox.StateOf("k"), DeliveryState::kFailed);
  EXPECT_EQ(outbox.Get("k")->attempts, 3);
  EXPECT_THAT(log.Text(), HasSubstr("failed for good after 3 attempt(s): wecom errcode 93000: "
                                    "invalid webhook url"));
  EXPECT_EQ(poster.requests.size(), 3u);
}

TEST(DeliveryTest, VendorErrorThatClearsIsDelivered) {
  ManualClock clock;
  MemoryOutbox outbox;
  FakePoster poster;
  int calls = 0;
  poster.body_for = [&](const HttpRequest&) {
    return std::string(++calls == 1 ? R"({"code":11232,"msg":"frequency limited"})"
                                    : R"({"code":0,"msg":"success"})");
  };
  DeliveryWorker worker(outbox, poster, {{"lark", "https://f/hook/T", ReceiverFormat::kFeishu, ""}},
                        clock, DeliveryOptions{});
  ASSERT_TRUE(outbox.Enqueue(MakeNote("k", "lark", clock.UnixSeconds())).ok());
  EXPECT_EQ(worker.RunOnce()->retried, 1u);
  EXPECT_EQ(outbox.Get("k")->last_error, "feishu code 11232: frequency limited");
  clock.Advance(60);
  EXPECT_EQ(worker.RunOnce()->delivered, 1u);
  EXPECT_EQ(*outbox.StateOf("k"), DeliveryState::kDelivered);
}

// A generic receiver's 200 is delivered whatever its body says (it has no vendor codes).
TEST(DeliveryTest, GenericReceiverBodyIsNotRead) {
  ManualClock clock;
  MemoryOutbox outbox;
  FakePoster poster;
  poster.body_for = [](const HttpRequest&) { return std::string(R"({"errcode":1})"); };
  DeliveryWorker worker(outbox, poster, {Plain("ops", "http://127.0.0.1:1/x")}, clock,
                        DeliveryOptions{});
  ASSERT_TRUE(outbox.Enqueue(MakeNote("k", "ops", clock.UnixSeconds())).ok());
  EXPECT_EQ(worker.RunOnce()->delivered, 1u);
}

TEST(DeliveryTest, UnknownReceiverIsKeptNotLost) {
  ManualClock clock;
  MemoryOutbox outbox;
  FakePoster poster;
  DeliveryWorker worker(outbox, poster, {Plain("ops", "http://127.0.0.1:1/x")}, clock,
                        DeliveryOptions{});
  ASSERT_TRUE(outbox.Enqueue(MakeNote("k", "gone", clock.UnixSeconds())).ok());
  ASSERT_TRUE(worker.RunOnce().ok());
  EXPECT_TRUE(poster.requests.empty());
  EXPECT_EQ(*outbox.StateOf("k"), DeliveryState::kPending);
  EXPECT_EQ(outbox.Get("k")->last_error, "receiver not configured");
}

// An unreachable receiver (transport error) backs off as a whole: one POST probes it.
TEST(DeliveryTest, UnreachableReceiverIsProbedByOnePost) {
  ManualClock clock;
  MemoryOutbox outbox;
  FakePoster poster;
  poster.status_for = [](const HttpRequest&) { return 0; };  // connection refused
  DeliveryWorker worker(outbox, poster, {Plain("ops", "http://127.0.0.1:1/x")}, clock,
                        DeliveryOptions{});
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(outbox
                    .Enqueue(MakeNote(std::string("k").append(std::to_string(i)), "ops",
                                      clock.UnixSeconds()))
                    .ok());
  }
  auto pass = worker.RunOnce();
  EXPECT_EQ(pass->attempted, 1u);  // one POST, not five, to a receiver that is down
  EXPECT_EQ(poster.requests.size(), 1u);
  EXPECT_EQ(outbox.Get("k0")->attempts, 1);
  EXPECT_EQ(outbox.Get("k4")->attempts, 0);
  EXPECT_EQ(worker.RunOnce()->attempted, 0u);  // still in the receiver's backoff
  clock.Advance(1.25);
  pass = worker.RunOnce();
  EXPECT_EQ(pass->attempted, 1u);  // the next probe: a notification not tried yet
  EXPECT_EQ(poster.requests.size(), 2u);
  EXPECT_EQ(HeaderOf(poster.requests[1], "Idempotency-Key"), "k1");
}

// max_age counts the time a notification has been pending (monotonic), not its wall-clock age.
TEST(DeliveryTest, NotificationsPendingLongerThanMaxAgeFail) {
  ManualClock clock;
  MemoryOutbox outbox;
  FakePoster poster;
  poster.status_for = [](const HttpRequest&) { return 503; };
  DeliveryOptions options;
  options.max_age_seconds = 60;
  options.seed = 5;
  DeliveryWorker worker(outbox, poster, {Plain("ops", "http://127.0.0.1:1/x")}, clock, options);
  // Created "a day ago" by the wall clock: irrelevant, it has not been pending yet.
  ASSERT_TRUE(outbox.Enqueue(MakeNote("k", "ops", clock.UnixSeconds() - 86400)).ok());
  for (int second = 0; second <= 59; ++second) {
    ASSERT_TRUE(worker.RunOnce().ok());
    clock.Advance(1);
  }
  EXPECT_EQ(*outbox.StateOf("k"), DeliveryState::kPending);
  clock.Advance(31);  // past any backoff: due again, 90 s pending
  ASSERT_TRUE(worker.RunOnce().ok());
  EXPECT_EQ(*outbox.StateOf("k"), DeliveryState::kFailed);
  EXPECT_THAT(outbox.Get("k")->last_error, HasSubstr("longer than max_age"));
}

// A receiver down for 10 minutes (default options, simulated time): everything arrives within
// one capped backoff of its return, with a bounded number of attempts meanwhile.
TEST(DeliveryTest, TenMinuteOutageLosesNothing) {
  ManualClock clock;
  MemoryOutbox outbox;
  FakePoster poster;
  bool up = false;
  poster.status_for = [&](const HttpRequest&) { return up ? 200 : 0; };
  DeliveryOptions options;
  options.seed = 3;
  DeliveryWorker worker(outbox, poster, {Plain("ops", "http://127.0.0.1:1/x")}, clock, options);
  std::set<std::string> ids;
  for (int second = 0; second < 600; ++second) {
    if (second % 60 == 0) {                     // a notification every minute during the outage
      std::string id = std::to_string(second);  // seconds into the outage
      ids.insert(id);
      ASSERT_TRUE(outbox.Enqueue(MakeNote(id, "ops", clock.UnixSeconds())).ok());
    }
    ASSERT_TRUE(worker.RunOnce().ok());
    clock.Advance(1);
  }
  const size_t posts_during_outage = poster.requests.size();
  EXPECT_LE(posts_during_outage, 60u);  // ~1 POST per capped backoff, not one per second
  up = true;
  const double back_at = clock.UnixSeconds();
  while (*outbox.PendingCount() > 0 && clock.UnixSeconds() - back_at < 120) {
    ASSERT_TRUE(worker.RunOnce().ok());
    clock.Advance(0.25);
  }
  EXPECT_EQ(*outbox.PendingCount(), 0u);
  EXPECT_LE(clock.UnixSeconds() - back_at, options.max_backoff_seconds * 1.2 + 1);
  std::set<std::string> delivered;
  for (size_t i = posts_during_outage; i < poster.requests.size(); ++i) {
    delivered.insert(HeaderOf(poster.requests[i], "Idempotency-Key"));
  }
  EXPECT_EQ(delivered, ids);
  for (const std::string& id : ids) EXPECT_EQ(*outbox.StateOf(id), DeliveryState::kDelivered);
}

// A clock whose wall time can step while its monotonic time does not (what an NTP step, or an
// operator's `date -s`, does to CLOCK_REALTIME and not to CLOCK_MONOTONIC).
class SteppingClock final : public Clock {
 public:
  double MonotonicSeconds() const override { return mono_.load(); }
  double UnixSeconds() const override { return 1.7e9 + mono_.load() + wall_step_.load(); }
  void Advance(double seconds) { mono_.store(mono_.load() + seconds); }
  void StepWall(double seconds) { wall_step_.store(wall_step_.load() + seconds); }

 private:
  std::atomic<double> mono_{0};
  std::atomic<double> wall_step_{0};
};

// Issue 29: stepping the wall clock back 1 h held a pending notification; forward 8 days
// dead-lettered a 6-second-old one. Scheduling is monotonic now: neither happens, and the
// step is logged.
TEST(DeliveryTest, WallClockStepsNeitherHoldNorAgeANotification) {
  for (double step : {-3600.0, -8 * 86400.0, 8 * 86400.0}) {
    SteppingClock clock;
    MemoryOutbox outbox;
    FakePoster poster;
    CapturedLog log;
    int calls = 0;
    poster.status_for = [&](const HttpRequest&) { return ++calls == 1 ? 503 : 200; };
    DeliveryOptions options;
    options.seed = 11;
    DeliveryWorker worker(outbox, poster, {Plain("ops", "http://127.0.0.1:1/x")}, clock, options,
                          log.logger);
    ASSERT_TRUE(outbox.Enqueue(MakeNote("k", "ops", clock.UnixSeconds())).ok());
    ASSERT_EQ(worker.RunOnce()->retried, 1u) << step;  // retry in ~1 s
    clock.Advance(6);
    clock.StepWall(step);
    auto pass = worker.RunOnce();
    ASSERT_TRUE(pass.ok());
    EXPECT_EQ(pass->delivered, 1u) << step;  // neither held nor dead-lettered
    EXPECT_EQ(*outbox.StateOf("k"), DeliveryState::kDelivered) << step;
    EXPECT_THAT(log.Text(), HasSubstr("wall clock stepped by")) << step;
  }
}

// Notifications pending through wall-clock steps of +-8 days, the receiver failing meanwhile:
// none is lost (dead-lettered) and none is held once the receiver is back.
TEST(DeliveryTest, ClockStepsOfEightDaysLoseAndHoldNothing) {
  SteppingClock clock;
  MemoryOutbox outbox;
  FakePoster poster;
  bool up = false;
  poster.status_for = [&](const HttpRequest&) { return up ? 200 : 500; };
  DeliveryOptions options;
  options.seed = 13;
  DeliveryWorker worker(outbox, poster, {Plain("ops", "http://127.0.0.1:1/x")}, clock, options);
  for (int i = 0; i < 10; ++i) {
    const std::string id = std::string("n").append(std::to_string(i));  // (GCC 12 -Wrestrict)
    ASSERT_TRUE(outbox.Enqueue(MakeNote(id, "ops", clock.UnixSeconds())).ok());
    ASSERT_TRUE(worker.RunOnce().ok());
    clock.StepWall(i % 2 == 0 ? 8 * 86400.0 : -8 * 86400.0);
    clock.Advance(1);
  }
  up = true;
  for (int i = 0; i < 200 && *outbox.PendingCount() > 0; ++i) {
    ASSERT_TRUE(worker.RunOnce().ok());
    clock.Advance(0.25);
  }
  EXPECT_EQ(*outbox.PendingCount(), 0u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(*outbox.StateOf(std::string("n").append(std::to_string(i))),
              DeliveryState::kDelivered)
        << i;
  }
  EXPECT_LE(clock.MonotonicSeconds(), 10 + options.max_backoff_seconds * 1.2 + 1);
}

// Issue 29 item 8: one notification that a receiver always refuses held back every later one
// (0 of 20 delivered in 40 s). Now it retries on its own backoff while the others go; its own
// alert's later notification (the resolved) waits for it.
TEST(DeliveryTest, APoisonNotificationHoldsBackOnlyItsOwnAlert) {
  ManualClock clock;
  MemoryOutbox outbox;
  FakePoster poster;
  poster.status_for = [](const HttpRequest& r) {
    return r.body.find("poison") != std::string::npos ? 500 : 200;
  };
  DeliveryOptions options;
  options.seed = 17;
  DeliveryWorker worker(outbox, poster, {Plain("ops", "http://127.0.0.1:1/x")}, clock, options);
  Notification poison = MakeNote("poison-firing", "ops", clock.UnixSeconds());
  poison.order_key = "poison";
  poison.body = R"({"poison": "firing"})";
  ASSERT_TRUE(outbox.Enqueue(poison).ok());
  Notification resolved = MakeNote("poison-resolved", "ops", clock.UnixSeconds());
  resolved.order_key = "poison";
  ASSERT_TRUE(outbox.Enqueue(resolved).ok());
  for (int i = 0; i < 20; ++i) {
    Notification n = MakeNote("ok" + std::to_string(i), "ops", clock.UnixSeconds());
    n.order_key = "alert" + std::to_string(i);
    ASSERT_TRUE(outbox.Enqueue(n).ok());
  }
  auto pass = worker.RunOnce();
  ASSERT_TRUE(pass.ok());
  EXPECT_EQ(pass->delivered, 20u);
  EXPECT_EQ(pass->retried, 1u);
  for (int minute = 0; minute < 5; ++minute) {  // the poison keeps failing on its own backoff
    clock.Advance(60);
    ASSERT_TRUE(worker.RunOnce().ok());
  }
  EXPECT_EQ(*outbox.StateOf("poison-firing"), DeliveryState::kPending);
  EXPECT_GE(outbox.Get("poison-firing")->attempts, 5);
  EXPECT_EQ(*outbox.StateOf("poison-resolved"), DeliveryState::kPending);
  EXPECT_EQ(outbox.Get("poison-resolved")->attempts, 0);  // never sent before its firing
  // A new alert arriving now is delivered on the next pass, not after the poison's backoff.
  ASSERT_TRUE(outbox.Enqueue(MakeNote("late", "ops", clock.UnixSeconds())).ok());
  EXPECT_EQ(worker.RunOnce()->delivered, 1u);
  for (const HttpRequest& r : poster.requests) {
    EXPECT_NE(HeaderOf(r, "Idempotency-Key"), "poison-resolved");
  }
}

// Two poison notifications in a row put the receiver in backoff; its probe is then the
// least-tried notification, so a good one still goes within the receiver's backoff.
TEST(DeliveryTest, ReceiverBackoffProbesTheLeastTriedNotification) {
  ManualClock clock;
  MemoryOutbox outbox;
  FakePoster poster;
  poster.status_for = [](const HttpRequest& r) {
    return r.body.find("poison") != std::string::npos ? 500 : 200;
  };
  DeliveryOptions options;
  options.seed = 19;
  DeliveryWorker worker(outbox, poster, {Plain("ops", "http://127.0.0.1:1/x")}, clock, options);
  for (const char* id : {"p1", "p2"}) {
    Notification n = MakeNote(id, "ops", clock.UnixSeconds());
    n.body = R"({"poison": 1})";
    ASSERT_TRUE(outbox.Enqueue(n).ok());
  }
  ASSERT_TRUE(outbox.Enqueue(MakeNote("good", "ops", clock.UnixSeconds())).ok());
  auto pass = worker.RunOnce();
  EXPECT_EQ(pass->retried, 2u);
  EXPECT_EQ(pass->delivered, 0u);  // two failures in a row: the receiver backs off
  EXPECT_EQ(*outbox.StateOf("good"), DeliveryState::kPending);
  clock.Advance(1.25);  // one receiver backoff (1 s + 20 %)
  pass = worker.RunOnce();
  EXPECT_EQ(*outbox.StateOf("good"), DeliveryState::kDelivered);
}

TEST(RetryAfterTest, ReadsSecondsAndTheThreeHttpDateForms) {
  // RFC 9110 sec. 5.6.7's example date, Sun, 06 Nov 1994 08:49:37 GMT, is unix 784111777.
  const double now = 784111777 - 120;
  EXPECT_EQ(RetryAfterSeconds("30", now), 30);
  EXPECT_EQ(RetryAfterSeconds(" 0 ", now), 0);
  EXPECT_EQ(RetryAfterSeconds("Sun, 06 Nov 1994 08:49:37 GMT", now), 120);
  EXPECT_EQ(RetryAfterSeconds("Sunday, 06-Nov-94 08:49:37 GMT", now), 120);
  EXPECT_EQ(RetryAfterSeconds("Sun Nov  6 08:49:37 1994", now), 120);
  EXPECT_EQ(RetryAfterSeconds("Sun, 06 Nov 1994 08:49:37 GMT", now + 1000), 0);  // past: now
  EXPECT_EQ(RetryAfterSeconds("soon", now), std::nullopt);
  EXPECT_EQ(RetryAfterSeconds("-5", now), std::nullopt);
  EXPECT_EQ(RetryAfterSeconds("", now), std::nullopt);
}

// Answers 429 with `retry_after` to its first POST, 200 afterwards.
class RateLimitedPoster final : public HttpPoster {
 public:
  std::string retry_after = "120";
  int calls = 0;
  HttpResponse Post(const HttpRequest&) override {
    HttpResponse r;
    r.status = ++calls == 1 ? 429 : 200;
    if (r.status == 429) r.retry_after = retry_after;
    return r;
  }
};

// Issue 29 item 11: Retry-After on 429 was ignored (Slack requires it be honoured). The
// receiver as a whole waits that long; a longer one is capped at max_age.
TEST(DeliveryTest, RetryAfterHoldsTheReceiverThatLongCappedAtMaxAge) {
  ManualClock clock;
  MemoryOutbox outbox;
  RateLimitedPoster poster;
  DeliveryOptions options;
  DeliveryWorker worker(outbox, poster, {Plain("slack", "http://127.0.0.1:1/x")}, clock, options);
  ASSERT_TRUE(outbox.Enqueue(MakeNote("a", "slack", clock.UnixSeconds())).ok());
  ASSERT_EQ(worker.RunOnce()->retried, 1u);
  EXPECT_EQ(outbox.Get("a")->last_error, "HTTP 429 (Retry-After 120 s)");
  ASSERT_TRUE(outbox.Enqueue(MakeNote("b", "slack", clock.UnixSeconds())).ok());
  clock.Advance(60);
  EXPECT_EQ(worker.RunOnce()->attempted, 0u);  // the whole receiver waits, b included
  clock.Advance(61);
  EXPECT_EQ(worker.RunOnce()->delivered, 2u);

  MemoryOutbox outbox2;
  RateLimitedPoster greedy;
  greedy.retry_after = "99999999";
  options.max_age_seconds = 300;
  DeliveryWorker capped(outbox2, greedy, {Plain("slack", "http://127.0.0.1:1/x")}, clock, options);
  ASSERT_TRUE(outbox2.Enqueue(MakeNote("c", "slack", clock.UnixSeconds())).ok());
  ASSERT_EQ(capped.RunOnce()->retried, 1u);
  EXPECT_EQ(outbox2.Get("c")->last_error, "HTTP 429 (Retry-After 300 s)");
}

// --- real HTTP on 127.0.0.1 --------------------------------------------------------------------

struct Received {
  std::string path;
  std::string key;
  std::string authorization;
  std::string body;
};

// An httplib server on 127.0.0.1 in its own thread; `answer` decides the status.
class TestReceiver {
 public:
  std::function<int(const httplib::Request&)> answer = [](const httplib::Request&) { return 200; };

  // Listens on `port` (0 = an ephemeral port) with a fresh server; returns the port (-1 when
  // it is taken).
  int Start(int port = 0) {
    server_ = std::make_unique<fulcrum::testing::FakeHttpServer>();
    server_->server().set_keep_alive_timeout(1);  // Stop() waits for idle keep-alive connections
    server_->server().Post(R"(/.*)", [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        received_.push_back({req.path, req.get_header_value("Idempotency-Key"),
                             req.get_header_value("Authorization"), req.body});
      }
      res.status = answer(req);
      res.set_content("{}", "application/json");
    });
    return server_->Start(port);
  }
  void Stop() { server_.reset(); }
  ~TestReceiver() { Stop(); }
  std::vector<Received> received() {
    std::lock_guard<std::mutex> lock(mutex_);
    return received_;
  }

 private:
  std::unique_ptr<fulcrum::testing::FakeHttpServer> server_;
  std::mutex mutex_;
  std::vector<Received> received_;
};

// Waits (bounded) until the outbox has nothing pending.
bool DrainWithin(Outbox& outbox, double seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (*outbox.PendingCount() == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

DeliveryOptions FastOptions() {
  DeliveryOptions options;
  options.initial_backoff_seconds = 0.02;
  options.max_backoff_seconds = 0.2;
  options.idle_poll_seconds = 0.02;
  options.request_timeout_seconds = 2;
  options.connect_timeout_seconds = 1;
  return options;
}

// Real transitions from the shipped rules: 4 GPUs overheat, hit XID 79 and cool down.
std::vector<Transition> FaultTransitions() {
  Evaluator evaluator(*DefaultRules());
  std::vector<Transition> out;
  const double t0 = 1.8e9;
  for (int second = 0; second < 400; ++second) {
    std::vector<Sample> batch;
    for (int gpu = 0; gpu < 4; ++gpu) {
      double temperature = (second >= 10 && second < 350) ? 95 : 60;
      batch.push_back({"gpu_temperature_celsius", gpu, temperature, t0 + second});
      batch.push_back({"gpu_xid_last", gpu, second >= 20 + gpu ? 79.0 : 0.0, t0 + second});
    }
    for (auto& t : evaluator.Evaluate(batch)) out.push_back(std::move(t));
  }
  return out;
}

TEST(DeliveryHttpTest, ReceiverDownThenBackGetsEveryNotification) {
  // Find a free port, then leave it closed: the receiver is down (connection refused).
  TestReceiver receiver;
  const int port = receiver.Start();
  ASSERT_GT(port, 0);
  receiver.Stop();

  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/hook";
  std::vector<Receiver> receivers = {{"am", url, ReceiverFormat::kAlertmanager, ""},
                                     {"slack", url + "/slack", ReceiverFormat::kSlack, ""}};
  MemoryOutbox outbox;
  SystemClock clock;
  std::map<std::string, std::string> sent;  // id -> body
  for (const Transition& t : FaultTransitions()) {
    for (const Notification& n :
         MakeNotifications(t, receivers, {"host", "http://127.0.0.1:9400"}, clock.UnixSeconds())) {
      sent[n.id] = n.body;
      ASSERT_TRUE(outbox.Enqueue(n).ok());
    }
  }
  // 4 GPUs x (GpuTooHot firing + resolved, GpuCriticalXid firing) x 2 receivers.
  ASSERT_EQ(sent.size(), 24u);

  CurlPoster poster;
  CapturedLog log;
  DeliveryWorker worker(outbox, poster, receivers, clock, FastOptions(), log.logger);
  worker.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // down for a while
  EXPECT_EQ(*outbox.PendingCount(), 24u);

  // Back, but answering 503 at first, then healthy.
  std::atomic<int> answered{0};
  receiver.answer = [&](const httplib::Request&) { return ++answered <= 3 ? 503 : 200; };
  ASSERT_EQ(receiver.Start(port), port) << "port " << port << " was taken meanwhile";
  ASSERT_TRUE(DrainWithin(outbox, 20)) << *outbox.PendingCount() << " still pending";
  worker.Stop();
  receiver.Stop();

  std::map<std::string, std::set<std::string>> bodies_by_key;
  for (const Received& r : receiver.received()) bodies_by_key[r.key].insert(r.body);
  std::set<std::string> keys;
  for (const auto& [key, bodies] : bodies_by_key) {
    keys.insert(key);
    EXPECT_EQ(bodies.size(), 1u) << "key " << key << " carried different bodies";
    ASSERT_EQ(sent.count(key), 1u) << "unexpected key " << key;
    EXPECT_EQ(*bodies.begin(), sent[key]);
  }
  std::set<std::string> sent_keys;
  for (const auto& [id, body] : sent) sent_keys.insert(id);
  EXPECT_EQ(keys, sent_keys);  // every notification arrived
  for (const auto& [id, body] : sent) EXPECT_EQ(*outbox.StateOf(id), DeliveryState::kDelivered);
  EXPECT_THAT(log.Text(), HasSubstr("Couldn't connect"));  // the outage was seen and retried
}

TEST(DeliveryHttpTest, TimeoutAfterReceiptDuplicatesWithTheSameKey) {
  TestReceiver receiver;
  std::atomic<int> calls{0};
  receiver.answer = [&](const httplib::Request&) {
    if (++calls == 1) std::this_thread::sleep_for(std::chrono::milliseconds(600));
    return 200;
  };
  const int port = receiver.Start();
  MemoryOutbox outbox;
  SystemClock clock;
  std::vector<Receiver> receivers = {
      {"r", "http://127.0.0.1:" + std::to_string(port) + "/x", ReceiverFormat::kGeneric, ""}};
  DeliveryOptions options = FastOptions();
  options.request_timeout_seconds = 0.2;  // the first answer comes too late
  CurlPoster poster;
  DeliveryWorker worker(outbox, poster, receivers, clock, options);
  ASSERT_TRUE(outbox.Enqueue(MakeNote("only-key", "r", clock.UnixSeconds())).ok());
  worker.Start();
  ASSERT_TRUE(DrainWithin(outbox, 10));
  worker.Stop();
  receiver.Stop();
  auto received = receiver.received();
  ASSERT_GE(received.size(), 2u);  // received, timed out, sent again: at-least-once
  for (const Received& r : received) {
    EXPECT_EQ(r.key, "only-key");
    EXPECT_EQ(r.body, R"({"id": "only-key"})");
  }
}

TEST(DeliveryHttpTest, SecretsNeverReachTheLogs) {
  TestReceiver receiver;
  std::atomic<int> calls{0};
  receiver.answer = [&](const httplib::Request& req) {
    if (req.path.find("/gone/") != std::string::npos) return 404;
    return ++calls == 1 ? 500 : 200;
  };
  const int port = receiver.Start();
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  // A closed port for an unreachable receiver.
  TestReceiver closed;
  const int closed_port = closed.Start();
  closed.Stop();
  std::vector<Receiver> receivers = {
      {"slack", base + "/services/T000/B000/SLACKPATHSECRET", ReceiverFormat::kSlack, ""},
      {"ding", base + "/robot/send?access_token=DINGQUERYSECRET", ReceiverFormat::kDingTalk,
       "BEARERSECRET"},
      {"gone", base + "/gone/GONEPATHSECRET", ReceiverFormat::kGeneric, ""},
      {"down",
       "http://user:USERPASSSECRET@127.0.0.1:" + std::to_string(closed_port) + "/DOWNSECRET",
       ReceiverFormat::kWeCom, ""}};

  CapturedLog log;
  auto previous_default = spdlog::default_logger();
  spdlog::set_default_logger(log.logger);  // anything logged through the default is caught too
  {
    MemoryOutbox outbox;
    SystemClock clock;
    for (std::string name : {"slack", "ding", "gone", "down"}) {
      ASSERT_TRUE(
          outbox.Enqueue(MakeNote("id-" + name + ":" + name, name, clock.UnixSeconds())).ok());
    }
    CurlPoster poster;
    DeliveryWorker worker(outbox, poster, receivers, clock, FastOptions(), nullptr);
    for (int pass = 0; pass < 200 && *outbox.StateOf("id-ding:ding") != DeliveryState::kDelivered;
         ++pass) {
      ASSERT_TRUE(worker.RunOnce().ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (int pass = 0; pass < 5; ++pass) {
      ASSERT_TRUE(worker.RunOnce().ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(*outbox.StateOf("id-slack:slack"), DeliveryState::kDelivered);
    EXPECT_EQ(*outbox.StateOf("id-ding:ding"), DeliveryState::kDelivered);
    EXPECT_EQ(*outbox.StateOf("id-gone:gone"), DeliveryState::kFailed);
    EXPECT_EQ(*outbox.StateOf("id-down:down"), DeliveryState::kPending);
  }
  spdlog::set_default_logger(previous_default);
  receiver.Stop();

  // The secrets were really used on the wire...
  bool saw_bearer = false, saw_path = false;
  for (const Received& r : receiver.received()) {
    saw_bearer |= r.authorization == "Bearer BEARERSECRET";
    saw_path |= r.path.find("SLACKPATHSECRET") != std::string::npos;
  }
  EXPECT_TRUE(saw_bearer);
  EXPECT_TRUE(saw_path);
  // ...and the log tells what happened without any of them.
  const std::string text = log.Text();
  EXPECT_THAT(text, HasSubstr("delivered to receiver 'slack'"));
  EXPECT_THAT(text, HasSubstr("HTTP 500"));
  EXPECT_THAT(text, HasSubstr("failed for good"));
  EXPECT_THAT(text, HasSubstr("Couldn't connect"));
  for (const char* secret : {"SLACKPATHSECRET", "DINGQUERYSECRET", "access_token", "BEARERSECRET",
                             "GONEPATHSECRET", "USERPASSSECRET", "DOWNSECRET", "/services/"}) {
    EXPECT_THAT(text, Not(HasSubstr(secret))) << secret;
  }
}

// Issue 19: with one receiver that never answers, the healthy one got its alerts only after the
// hanging POST timed out. Each receiver now has its own worker: the healthy receiver's
// notifications are delivered while the hanging POST is still in flight.
TEST(DeliveryHttpTest, HangingReceiverNeverDelaysAnother) {
  // The hanging receiver takes the request and never answers (until the test releases it).
  std::atomic<bool> release{false};
  TestReceiver hanging;
  hanging.answer = [&](const httplib::Request&) {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return 200;
  };
  const int hanging_port = hanging.Start();
  TestReceiver healthy;
  const int port = healthy.Start();
  std::vector<Receiver> receivers = {
      Plain("hang", "http://127.0.0.1:" + std::to_string(hanging_port) + "/hook"),
      Plain("ok", "http://127.0.0.1:" + std::to_string(port) + "/hook")};
  MemoryOutbox outbox;
  SystemClock clock;
  DeliveryOptions options = FastOptions();
  options.request_timeout_seconds = 120;  // far longer than the test waits
  CurlPoster poster;
  DeliveryWorker worker(outbox, poster, receivers, clock, options);
  const double t0 = clock.UnixSeconds();
  // The hanging receiver's notification is older: a single queue would POST it first.
  ASSERT_TRUE(outbox.Enqueue(MakeNote("h1", "hang", t0 - 2)).ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(outbox.Enqueue(MakeNote("ok" + std::to_string(i), "ok", t0 - 1 + i * 0.1)).ok());
  }
  worker.Start();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto delivered = [&] {
    for (int i = 0; i < 3; ++i) {
      if (*outbox.StateOf("ok" + std::to_string(i)) != DeliveryState::kDelivered) return false;
    }
    return true;
  };
  while (!delivered() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(healthy.received().size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(*outbox.StateOf("ok" + std::to_string(i)), DeliveryState::kDelivered);
  }
  // The hanging POST has not ended (it waits for its 120 s timeout): still pending, 0 attempts.
  while (hanging.received().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(hanging.received().size(), 1u);  // its POST is in flight, not yet answered
  EXPECT_EQ(*outbox.StateOf("h1"), DeliveryState::kPending);
  EXPECT_EQ(outbox.Get("h1")->attempts, 0);
  release = true;  // Stop() waits for the POST in flight
  worker.Stop();
  hanging.Stop();
}

// A loopback receiver for the redirect, Retry-After and poison cases (issue 29): /final records
// what it got; the rest answer as their names say (/to-other redirects to other_url's /final).
class ShapedReceiver {
 public:
  ShapedReceiver() {
    auto& s = server_.server();
    s.set_keep_alive_timeout(1);
    s.Post("/final", [this](const httplib::Request& req, httplib::Response& res) {
      Record("final", req);
      res.set_content("{}", "application/json");
    });
    s.Post("/r302", [](const httplib::Request&, httplib::Response& res) {
      res.status = 302;
      res.set_header("Location", "/final");
    });
    s.Post("/r303", [](const httplib::Request&, httplib::Response& res) {
      res.status = 303;
      res.set_header("Location", "/final");
    });
    s.Post(R"(/loop/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
      Record("loop", req);
      res.status = 308;
      res.set_header("Location", "/loop/" + std::to_string(std::stoi(req.matches[1]) + 1));
    });
    s.Post("/to-https", [this](const httplib::Request&, httplib::Response& res) {
      res.status = 301;
      std::lock_guard<std::mutex> lock(mutex_);
      res.set_header("Location", "https://127.0.0.1:" + std::to_string(port_) + "/final");
    });
    s.Post("/to-other", [this](const httplib::Request&, httplib::Response& res) {
      res.status = 307;
      std::lock_guard<std::mutex> lock(mutex_);
      res.set_header("Location", other_url_ + "/final");
    });
    s.Post("/limited", [this](const httplib::Request& req, httplib::Response& res) {
      if (Record("limited", req) == 1) {
        res.status = 429;
        res.set_header("Retry-After", "1");
        return;
      }
      res.set_content("{}", "application/json");
    });
    s.Post("/poison", [this](const httplib::Request& req, httplib::Response& res) {
      const bool poison = req.body.find("poison") != std::string::npos;
      Record(poison ? "poison" : "ok", req);
      res.status = poison ? 500 : 200;
    });
    const int port = server_.Start();
    std::lock_guard<std::mutex> lock(mutex_);  // the server's threads already run
    port_ = port;
  }
  std::string url() const { return server_.url(); }
  std::vector<Received> Got(const std::string& route) {
    std::lock_guard<std::mutex> lock(mutex_);
    return received_[route];
  }
  // Set from the test's thread while the server's threads run: under the mutex, because the
  // request that reads it reaches the server through libcurl and httplib, whose socket I/O
  // ThreadSanitizer does not count as synchronisation.
  void SetOtherUrl(const std::string& url) {
    std::lock_guard<std::mutex> lock(mutex_);
    other_url_ = url;
  }

 private:
  size_t Record(const std::string& route, const httplib::Request& req) {
    std::lock_guard<std::mutex> lock(mutex_);
    received_[route].push_back({req.path, req.get_header_value("Idempotency-Key"),
                                req.get_header_value("Authorization"), req.body});
    return received_[route].size();
  }
  std::mutex mutex_;
  std::map<std::string, std::vector<Received>> received_;
  std::string other_url_;
  int port_ = 0;
  fulcrum::testing::FakeHttpServer server_;  // last: stopped before the state it touches
};

// Issue 29 item 11: a 302 dead-lettered on the first attempt. 301/302/307/308 are followed with
// the body re-POSTed (up to 5), same scheme only; Authorization goes to the same host and port
// only; 303 fails.
TEST(DeliveryHttpTest, RedirectsAreFollowedByTheRules) {
  ShapedReceiver receiver;
  ShapedReceiver other;
  receiver.SetOtherUrl(other.url());
  const std::string base = receiver.url();
  std::vector<Receiver> receivers;
  for (const char* route : {"r302", "r303", "loop/0", "to-https", "to-other"}) {
    receivers.push_back({route, base + "/" + route, ReceiverFormat::kGeneric, "TOKEN"});
  }
  MemoryOutbox outbox;
  SystemClock clock;
  for (const Receiver& r : receivers) {
    ASSERT_TRUE(outbox.Enqueue(MakeNote("id-" + r.name, r.name, clock.UnixSeconds())).ok());
  }
  CurlPoster poster;
  CapturedLog log;
  DeliveryWorker worker(outbox, poster, receivers, clock, FastOptions(), log.logger);
  auto pass = worker.RunOnce();
  ASSERT_TRUE(pass.ok());
  EXPECT_EQ(pass->delivered, 2u);
  EXPECT_EQ(pass->failed, 3u);

  EXPECT_EQ(*outbox.StateOf("id-r302"), DeliveryState::kDelivered);
  auto finals = receiver.Got("final");
  ASSERT_EQ(finals.size(), 1u);  // the 302 re-POSTed its body, token and key (same host)
  EXPECT_EQ(finals[0].body, R"({"id": "id-r302"})");
  EXPECT_EQ(finals[0].authorization, "Bearer TOKEN");
  EXPECT_EQ(finals[0].key, "id-r302");

  EXPECT_EQ(*outbox.StateOf("id-to-other"), DeliveryState::kDelivered)
      << outbox.Get("id-to-other")->last_error;
  auto others = other.Got("final");
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].body, R"({"id": "id-to-other"})");
  EXPECT_EQ(others[0].authorization, "");  // another host:port gets no token

  EXPECT_EQ(*outbox.StateOf("id-r303"), DeliveryState::kFailed);
  EXPECT_THAT(outbox.Get("id-r303")->last_error, HasSubstr("303"));
  EXPECT_EQ(*outbox.StateOf("id-loop/0"), DeliveryState::kFailed);
  EXPECT_THAT(outbox.Get("id-loop/0")->last_error, HasSubstr("more than 5 redirects"));
  EXPECT_EQ(receiver.Got("loop").size(), 6u);  // the first POST and 5 redirects
  EXPECT_EQ(*outbox.StateOf("id-to-https"), DeliveryState::kFailed);
  EXPECT_THAT(outbox.Get("id-to-https")->last_error, HasSubstr("to https from http"));
  EXPECT_THAT(log.Text(), Not(HasSubstr("TOKEN")));
}

// Retry-After from a real answer (curl's header callback): the receiver waits that long.
TEST(DeliveryHttpTest, RetryAfterFromTheWireIsHonoured) {
  ShapedReceiver receiver;
  MemoryOutbox outbox;
  SystemClock clock;
  std::vector<Receiver> receivers = {Plain("slack", receiver.url() + "/limited")};
  CurlPoster poster;
  DeliveryWorker worker(outbox, poster, receivers, clock, FastOptions());
  ASSERT_TRUE(outbox.Enqueue(MakeNote("k", "slack", clock.UnixSeconds())).ok());
  ASSERT_EQ(worker.RunOnce()->retried, 1u);
  EXPECT_EQ(outbox.Get("k")->last_error, "HTTP 429 (Retry-After 1 s)");
  EXPECT_EQ(worker.RunOnce()->attempted, 0u);  // FastOptions' backoff is 20 ms: Retry-After rules
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(worker.RunOnce()->delivered, 1u);
  EXPECT_EQ(receiver.Got("limited").size(), 2u);
}

// Issue 29 item 8 over real HTTP: the receiver answers 500 to one alert's notifications and 200
// to the others; each other one is delivered on its first attempt while the poison retries.
TEST(DeliveryHttpTest, PoisonNotificationDoesNotDelayOthers) {
  ShapedReceiver receiver;
  MemoryOutbox outbox;
  SystemClock clock;
  std::vector<Receiver> receivers = {Plain("ops", receiver.url() + "/poison")};
  Notification poison = MakeNote("poison", "ops", clock.UnixSeconds());
  poison.body = R"({"poison": true})";
  poison.order_key = "bad-alert";
  ASSERT_TRUE(outbox.Enqueue(poison).ok());
  for (int i = 0; i < 20; ++i) {
    Notification n = MakeNote("ok" + std::to_string(i), "ops", clock.UnixSeconds());
    n.order_key = "alert" + std::to_string(i);
    ASSERT_TRUE(outbox.Enqueue(n).ok());
  }
  CurlPoster poster;
  DeliveryWorker worker(outbox, poster, receivers, clock, FastOptions());
  worker.Start();
  // Bounded wait until only the poison is pending (20 s safety net).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (*outbox.PendingCount() > 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  while (receiver.Got("poison").size() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  worker.Stop();
  for (int i = 0; i < 20; ++i) {
    const std::string id = "ok" + std::to_string(i);
    EXPECT_EQ(*outbox.StateOf(id), DeliveryState::kDelivered) << id;
    EXPECT_EQ(outbox.Get(id)->attempts, 1) << id;  // never held back, never retried
  }
  EXPECT_EQ(receiver.Got("ok").size(), 20u);
  EXPECT_EQ(*outbox.StateOf("poison"), DeliveryState::kPending);
  EXPECT_GE(receiver.Got("poison").size(), 3u);  // retried on its own backoff
}

// Start-up validation catches what used to pass until the first alert: the error names the
// receiver and the problem, never the URL.
// Fake Feishu and DingTalk bots over real HTTP that verify signatures exactly as the vendors
// document (support/vendor_signatures.h has the recipes and sources): a body or URL signed with
// the bot's secret is accepted ({"code":0} / {"errcode":0}); anything else gets the vendor's
// HTTP 200 error answer. The agent's receiver secret matches one bot and not the other.
class SigningBots {
 public:
  SigningBots(std::string feishu_secret, std::string dingtalk_secret)
      : feishu_secret_(std::move(feishu_secret)), dingtalk_secret_(std::move(dingtalk_secret)) {
    server_.server().Post(
        "/open-apis/bot/v2/hook/T", [this](const httplib::Request& req, httplib::Response& res) {
          const bool ok = fulcrum::testing::FeishuAccepts(req.body, feishu_secret_, Now());
          Count(ok ? "feishu-ok" : "feishu-refused");
          res.set_content(ok ? R"({"code":0,"data":{},"msg":"success"})"
                             : R"({"code":19021,"data":{},"msg":"sign match fail or timestamp is )"
                               R"(not within one hour from current time"})",
                          "application/json");
        });
    server_.server().Post(
        "/robot/send", [this](const httplib::Request& req, httplib::Response& res) {
          // httplib URL-decodes the query values.
          const bool ok = req.get_param_value("access_token") == "TOKEN" &&
                          fulcrum::testing::DingTalkAccepts(req.get_param_value("timestamp"),
                                                            req.get_param_value("sign"),
                                                            dingtalk_secret_, Now());
          Count(ok ? "dingtalk-ok" : "dingtalk-refused");
          res.set_content(ok ? R"({"errcode":0,"errmsg":"ok"})"
                             : R"({"errcode":310000,"errmsg":"sign not match"})",
                          "application/json");
        });
    server_.Start();
  }
  std::string url() const { return server_.url(); }
  int CountOf(const std::string& what) {
    MutexLock lock(mutex_);
    return counts_[what];
  }

 private:
  static double Now() { return SystemClock().UnixSeconds(); }
  void Count(const std::string& what) {
    MutexLock lock(mutex_);
    ++counts_[what];
  }
  const std::string feishu_secret_, dingtalk_secret_;
  Mutex mutex_;
  std::map<std::string, int> counts_ GUARDED_BY(mutex_);
  fulcrum::testing::FakeHttpServer server_;  // last: stopped before the state it touches
};

TEST(DeliveryHttpTest, SignedBotsAcceptTheSignatureAndWrongSecretsDeadLetterWithTheMessage) {
  SigningBots bots("feishu-s3cret", "SECding-s3cret");
  Receiver feishu{
      "lark", bots.url() + "/open-apis/bot/v2/hook/T", ReceiverFormat::kFeishu, "", "feishu-s3cret",
      ""};
  Receiver ding{"ding",
                bots.url() + "/robot/send?access_token=TOKEN",
                ReceiverFormat::kDingTalk,
                "",
                "SECding-s3cret",
                ""};
  Receiver ding_wrong{"ding-wrong",
                      bots.url() + "/robot/send?access_token=TOKEN",
                      ReceiverFormat::kDingTalk,
                      "",
                      "SECnot-the-secret",
                      ""};
  Receiver feishu_unsigned{"lark-unsigned",
                           bots.url() + "/open-apis/bot/v2/hook/T",
                           ReceiverFormat::kFeishu,
                           "",
                           "",
                           ""};
  MemoryOutbox outbox;
  SystemClock clock;
  for (const Receiver* r : {&feishu, &ding, &ding_wrong, &feishu_unsigned}) {
    Notification n = MakeNote("key:" + r->name, r->name, clock.UnixSeconds());
    n.body = R"({"msgtype":"text","text":{"content":"[FIRING] x"}})";
    ASSERT_TRUE(outbox.Enqueue(n).ok());
  }
  CurlPoster poster;
  CapturedLog log;
  DeliveryOptions options = FastOptions();
  options.max_vendor_error_attempts = 3;
  DeliveryWorker worker(outbox, poster, {feishu, ding, ding_wrong, feishu_unsigned}, clock, options,
                        log.logger);
  worker.Start();
  ASSERT_TRUE(DrainWithin(outbox, 20));
  worker.Stop();
  EXPECT_EQ(*outbox.StateOf("key:lark"), DeliveryState::kDelivered);
  EXPECT_EQ(*outbox.StateOf("key:ding"), DeliveryState::kDelivered);
  EXPECT_EQ(*outbox.StateOf("key:ding-wrong"), DeliveryState::kFailed);
  EXPECT_EQ(*outbox.StateOf("key:lark-unsigned"), DeliveryState::kFailed);
  EXPECT_EQ(outbox.Get("key:ding-wrong")->last_error, "dingtalk errcode 310000: sign not match");
  EXPECT_THAT(outbox.Get("key:lark-unsigned")->last_error, HasSubstr("feishu code 19021"));
  EXPECT_EQ(bots.CountOf("feishu-ok"), 1);
  EXPECT_EQ(bots.CountOf("dingtalk-ok"), 1);
  EXPECT_EQ(bots.CountOf("dingtalk-refused"), 3);  // retried, then given up
  EXPECT_EQ(bots.CountOf("feishu-refused"), 3);
  const std::string text = log.Text();
  EXPECT_THAT(text, HasSubstr("receiver 'ding-wrong' failed for good after 3 attempt(s): "
                              "dingtalk errcode 310000: sign not match"));
  for (const char* secret :
       {"feishu-s3cret", "SECding-s3cret", "SECnot-the-secret", "TOKEN", "sign="}) {
    EXPECT_THAT(text, Not(HasSubstr(secret))) << secret;
  }
}

TEST(ValidateReceiverUrlTest, RefusesUnclosedIpv6AndBadPortsWithoutShowingTheUrl) {
  EXPECT_TRUE(ValidateReceiverUrl("ok", "https://hooks.example.com/services/T/B/X").ok());
  EXPECT_TRUE(ValidateReceiverUrl("ok6", "http://[::1]:8080/hook").ok());
  for (const char* bad : {"http://[::1/SECRETPATH", "http://example.com:99999/SECRETPATH",
                          "http://example.com:0/SECRETPATH", "http://:80/SECRETPATH",
                          "ftp://example.com/SECRETPATH"}) {
    Status st = ValidateReceiverUrl("pager", bad);
    EXPECT_EQ(st.code(), StatusCode::kInvalidInput) << bad;
    EXPECT_THAT(st.message(), HasSubstr("receiver 'pager'")) << bad;
    EXPECT_THAT(st.message(), Not(HasSubstr("SECRETPATH"))) << bad;
  }
}

}  // namespace
}  // namespace fulcrum::alert
