// The delivery worker drains the Outbox: for each due notification it POSTs the body to its
// receiver (Content-Type: application/json, Idempotency-Key: <id>, Authorization when the
// receiver has a token; signature, routing key and API path added by alert/notify_send.h)
// through an HttpPoster. 2xx = delivered, unless the body carries a vendor error code
// (Feishu, DingTalk, WeCom answer 200 on failure: VendorError), which is retried like a 5xx
// and failed for good, with the vendor's message, after max_vendor_error_attempts; transport
// errors, 408, 429 and 5xx = retry with exponential backoff and jitter (never given up before
// max_age of time pending); other 4xx = failed for good. Redirects: 301/302/307/308 re-POST the
// body to the Location, same scheme only, at most 5 hops, Authorization dropped when the host or
// port changes; 303 is a failure. Retry-After on 429/503 is honoured (capped at max_age).
// Each notification backs off on its own, so one that a receiver keeps refusing never holds back
// another alert's (the outbox keeps each alert's notifications in order). The receiver as a whole
// backs off when it is unreachable, when two notifications in a row fail, or when it sends
// Retry-After: then one POST probes it per backoff period, the least-tried notification first.
// Scheduling uses the monotonic clock; a wall-clock step is logged and changes nothing.
// Delivery is at-least-once: a crash between POST and MarkDelivered re-sends with the same
// Idempotency-Key. Logs name the receiver and RedactUrl(url) only, never the URL path, query or
// token. RunOnce is one pass over every receiver on the caller's thread; Start runs one thread
// per receiver (RunOnceFor), so a receiver that hangs until its timeout never delays another.
// The poster must then be thread-safe (CurlPoster is).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "alert/notify.h"
#include "alert/outbox_memory.h"
#include "core/clock.h"
#include "core/mutex.h"
#include "core/status.h"

namespace spdlog {
class logger;
}

namespace fulcrum::alert {

struct HttpRequest {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  double timeout_seconds = 10;         // whole request
  double connect_timeout_seconds = 3;  // TCP/TLS connect
};

struct HttpResponse {
  int status = 0;            // HTTP status; 0 when no response (connect/timeout/TLS error)
  std::string error;         // transport error text when status == 0 (may need redaction)
  std::string body;          // the response body, at most kMaxResponseBodyBytes of it
  std::string redirect_url;  // SECRET: a 3xx's Location, made absolute ("" when none)
  std::string retry_after;   // the Retry-After header's value ("" when none)
};

// At most this many redirects are followed for one delivery attempt (issue 29).
inline constexpr int kMaxRedirects = 5;

// The part of a receiver's answer kept (vendors' error objects are a few hundred bytes).
inline constexpr size_t kMaxResponseBodyBytes = 64 * 1024;

// Seam for outbound HTTP. Implementations must be callable from the worker thread.
class HttpPoster {
 public:
  virtual ~HttpPoster() = default;
  virtual HttpResponse Post(const HttpRequest& request) = 0;
};

// libcurl: no signals, follows no redirects itself (the worker does, with its rules), TLS
// verified, timeouts as in the request; reports a 3xx's Location and any Retry-After.
// Thread-safe: each Post takes an idle easy handle (kept for keep-alive) or makes one, so the
// receivers' workers post concurrently.
class CurlPoster final : public HttpPoster {
 public:
  CurlPoster() = default;
  ~CurlPoster() override;
  CurlPoster(const CurlPoster&) = delete;
  CurlPoster& operator=(const CurlPoster&) = delete;
  HttpResponse Post(const HttpRequest& request) override;

 private:
  Mutex mutex_;
  std::vector<void*> idle_ GUARDED_BY(mutex_);  // CURL* handles not in use
};

// Checks a receiver URL the way libcurl will parse it when an alert fires: http or https, a
// host (an IPv6 literal closed), a port 1-65535. The error names the receiver and the problem,
// never the URL (it may hold a secret).
Status ValidateReceiverUrl(const std::string& receiver_name, const std::string& url);

// Seconds to wait from `now_unix` that a Retry-After value asks for (RFC 9110 sec. 10.2.3:
// delay-seconds, or an HTTP-date, RFC 9110 sec. 5.6.7), at least 0; nullopt when the value is
// neither.
std::optional<double> RetryAfterSeconds(std::string_view value, double now_unix);

struct DeliveryOptions {
  double initial_backoff_seconds = 1;  // delay after the first failure
  double backoff_multiplier = 2;
  double max_backoff_seconds = 30;  // cap: a receiver back after an outage is served within it
  double jitter_fraction = 0.2;     // delay * uniform(1 - j, 1 + j)
  // Notifications pending longer (monotonic time the agent ran, not wall time) are marked failed.
  double max_age_seconds = 7 * 24 * 3600.0;
  // A vendor that answers 2xx with an error code (bad signature, keyword filter, revoked bot)
  // usually answers the same again: such an answer fails it for good once this many attempts
  // (of any outcome) have been made.
  int max_vendor_error_attempts = 5;
  size_t batch_size = 64;  // FetchDue limit per pass
  double request_timeout_seconds = 10;
  double connect_timeout_seconds = 3;
  double idle_poll_seconds = 0.25;  // worker thread: sleep between passes unless woken
  uint64_t seed = 0;                // jitter RNG seed (0 = random_device)
};

struct DeliveryPassStats {
  size_t attempted = 0;
  size_t delivered = 0;
  size_t retried = 0;
  size_t failed = 0;
};

// Delay before attempt number `attempts + 1` after `attempts` failures (attempts >= 1), without
// jitter: min(initial * multiplier^(attempts-1), max).
double BackoffSeconds(const DeliveryOptions& options, int attempts);

class DeliveryWorker {
 public:
  // `outbox`, `poster` and `clock` must outlive the worker. `logger` null = spdlog's default.
  DeliveryWorker(Outbox& outbox, HttpPoster& poster, std::vector<Receiver> receivers,
                 const Clock& clock, DeliveryOptions options,
                 std::shared_ptr<spdlog::logger> logger = nullptr);
  ~DeliveryWorker();  // Stop()s
  DeliveryWorker(const DeliveryWorker&) = delete;
  DeliveryWorker& operator=(const DeliveryWorker&) = delete;

  // One pass over the due notifications (at most batch_size). A notification whose receiver
  // is not configured (config changed) is retried later, not lost.
  Result<DeliveryPassStats> RunOnce();
  // The same pass over one receiver's notifications only (what its worker thread runs).
  Result<DeliveryPassStats> RunOnceFor(const std::string& receiver);

  // Rebases the outbox's schedule on this process's monotonic clock, then runs RunOnceFor on a
  // thread per receiver: again at once while a pass delivered a full batch, otherwise after
  // idle_poll_seconds or a Wake(). Stop() joins; both idempotent.
  void Start();
  void Stop();
  void Wake();  // call after Enqueue to deliver without waiting for the poll

 private:
  void Loop(const std::string& receiver);
  bool WaitForWake(std::chrono::steady_clock::time_point deadline) REQUIRES(mutex_) {
    return wake_.WaitUntil(mutex_, deadline);
  }
  Result<DeliveryPassStats> Pass(const std::string& receiver_filter);
  Result<HttpRequest> MakeRequest(const Receiver& receiver, const Notification& notification) const;
  // What one attempt came to: the final answer after redirects, and the error when it failed.
  struct Outcome {
    HttpResponse response;
    std::string error;                  // "" when delivered
    bool permanent = false;             // failed for good
    bool receiver_wide = false;         // the receiver, not this notification, is unwell
    std::optional<double> retry_after;  // seconds the receiver asked for
  };
  Outcome Send(const Receiver& receiver, HttpRequest request, const Notification& n);
  Outcome Classify(const Receiver& receiver, HttpResponse response, const Notification& n) const;
  void Attempt(const Receiver& receiver, const Notification& n, DeliveryPassStats& stats);
  void HandleFailure(const Notification& n, const Outcome& outcome, DeliveryPassStats& stats);
  double AgeSeconds(const Notification& n, double now_mono) const;
  double ReceiverWaitUntil(const std::string& receiver);
  void NoteClockStep();

  Outbox& outbox_;
  HttpPoster& poster_;
  std::vector<Receiver> receivers_;
  const Clock& clock_;
  DeliveryOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  struct ReceiverHealth {
    int consecutive_failures = 0;  // failed attempts since its last delivery, each of another
                                   // notification than the one before
    std::string last_failed_id;
    double retry_at = 0;  // monotonic seconds; no POST to this receiver before
  };
  // Shared by the receivers' workers; held only around bookkeeping, never during a POST.
  Mutex health_mutex_;
  std::mt19937_64 rng_ GUARDED_BY(health_mutex_);
  std::map<std::string, ReceiverHealth> health_ GUARDED_BY(health_mutex_);
  std::optional<double> clock_offset_ GUARDED_BY(health_mutex_);  // wall - monotonic, last pass

  Mutex mutex_;
  CondVar wake_;
  bool stop_requested_ GUARDED_BY(mutex_) = false;
  uint64_t wake_generation_ GUARDED_BY(mutex_) = 0;  // bumped by Wake(); each worker tracks it
  std::vector<std::thread> threads_ GUARDED_BY(mutex_);
};

}  // namespace fulcrum::alert
