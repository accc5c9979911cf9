#include "alert/delivery.h"

#include <curl/curl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "alert/notify_send.h"

namespace fulcrum::alert {
namespace {

// Keeps the first kMaxResponseBodyBytes of the answer, discards the rest.
size_t KeepBody(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<std::string*>(user);
  const size_t bytes = size * count;
  if (body->size() < kMaxResponseBodyBytes) {
    body->append(data, std::min(bytes, kMaxResponseBodyBytes - body->size()));
  }
  return bytes;
}

bool IsRetryableStatus(int status) {
  return status == 0 || status == 408 || status == 429 || status >= 500;
}

}  // namespace

// --- CurlPoster ----------------------------------------------------------------------------

CurlPoster::~CurlPoster() {
  MutexLock lock(mutex_);
  for (void* handle : idle_) curl_easy_cleanup(static_cast<CURL*>(handle));
}

HttpResponse CurlPoster::Post(const HttpRequest& request) {
  HttpResponse response;
  CURL* curl = nullptr;
  {
    MutexLock lock(mutex_);
    if (!idle_.empty()) {
      curl = static_cast<CURL*>(idle_.back());
      idle_.pop_back();
    }
  }
  if (curl == nullptr) curl = curl_easy_init();
  if (curl == nullptr) {
    response.error = "libcurl could not be initialised";
    return response;
  }
  curl_easy_reset(curl);  // keeps the connection cache (keep-alive)
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : request.headers) {
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  }
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85: CURLOPT_PROTOCOLS_STR
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(std::max(1.0, request.timeout_seconds * 1000)));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::max(1.0, request.connect_timeout_seconds * 1000)));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &KeepBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
  CURLcode code = curl_easy_perform(curl);
  if (code == CURLE_OK) {
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    response.status = static_cast<int>(status);
  } else {
    // curl_easy_strerror names the kind of failure only, never the URL (which may hold tokens).
    response.error = curl_easy_strerror(code);
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
  curl_slist_free_all(headers);
  MutexLock lock(mutex_);
  idle_.push_back(curl);
  return response;
}

Status ValidateReceiverUrl(const std::string& receiver_name, const std::string& url) {
  auto invalid = [&](const std::string& why) {
    return Status::InvalidInput("receiver '" + receiver_name +
                                "': url is not a valid http(s) URL (" + why +
                                "; the URL is not shown, it may hold a secret)");
  };
  CURLU* parsed = curl_url();
  if (parsed == nullptr) return Status::Internal("libcurl could not allocate a URL handle");
  CURLUcode code = curl_url_set(parsed, CURLUPART_URL, url.c_str(), 0);
  std::string why;
  if (code != CURLUE_OK) {
    why = curl_url_strerror(code);
  } else {
    char* scheme = nullptr;
    char* port = nullptr;
    char* host = nullptr;
    curl_url_get(parsed, CURLUPART_SCHEME, &scheme, 0);
    curl_url_get(parsed, CURLUPART_HOST, &host, 0);
    CURLUcode port_code = curl_url_get(parsed, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
    std::string s = scheme != nullptr ? scheme : "";
    if (s != "http" && s != "https") {
      why = "scheme '" + s + "', expected http or https";
    } else if (host == nullptr || host[0] == '\0') {
      why = "no host";
    } else if (port_code != CURLUE_OK || port == nullptr || std::atoi(port) < 1 ||
               std::atoi(port) > 65535) {
      why = "port outside 1-65535";
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
  }
  curl_url_cleanup(parsed);
  return why.empty() ? Status::Ok() : invalid(why);
}

// --- DeliveryWorker ------------------------------------------------------------------------

double BackoffSeconds(const DeliveryOptions& options, int attempts) {
  double delay = options.initial_backoff_seconds *
                 std::pow(options.backoff_multiplier, std::max(0, attempts - 1));
  return std::min(delay, options.max_backoff_seconds);
}

DeliveryWorker::DeliveryWorker(Outbox& outbox, HttpPoster& poster, std::vector<Receiver> receivers,
                               const Clock& clock, DeliveryOptions options,
                               std::shared_ptr<spdlog::logger> logger)
    : outbox_(outbox),
      poster_(poster),
      receivers_(std::move(receivers)),
      clock_(clock),
      options_(options),
      logger_(logger ? std::move(logger) : spdlog::default_logger()),
      rng_(options.seed != 0 ? options.seed : std::random_device{}()) {}

Result<DeliveryPassStats> DeliveryWorker::RunOnce() { return Pass(""); }

Result<DeliveryPassStats> DeliveryWorker::RunOnceFor(const std::string& receiver) {
  return Pass(receiver);
}

DeliveryWorker::~DeliveryWorker() { Stop(); }

Result<HttpRequest> DeliveryWorker::MakeRequest(const Receiver& receiver,
                                                const Notification& notification) const {
  FULCRUM_ASSIGN_OR_RETURN(PreparedSend send,
                           PrepareSend(receiver, notification.body, clock_.UnixSeconds()));
  HttpRequest request;
  request.url = std::move(send.url);
  request.body = std::move(send.body);
  request.headers = {{"Content-Type", "application/json"},
                     {"Idempotency-Key", notification.id},
                     {"User-Agent", "fulcrum/" FULCRUM_VERSION}};
  if (!receiver.bearer_token.empty()) {
    request.headers.emplace_back("Authorization", "Bearer " + receiver.bearer_token);
  }
  request.timeout_seconds = options_.request_timeout_seconds;
  request.connect_timeout_seconds = options_.connect_timeout_seconds;
  return request;
}

void DeliveryWorker::HandleFailure(const Notification& n, const std::string& error, bool permanent,
                                   DeliveryPassStats& stats) {
  const int attempts = n.attempts + 1;
  if (permanent) {
    Status marked = outbox_.MarkFailed(n.id, attempts, error);
    if (!marked.ok()) logger_->error("alert outbox: {}", marked.ToString());
    logger_->error("alert notification {} to receiver '{}' failed for good after {} attempt(s): {}",
                   n.id, n.receiver, attempts, error);
    ++stats.failed;
    return;
  }
  // The receiver is unwell: back off the receiver as a whole, so that an outage costs one POST
  // per backoff period, not one per notification.
  double delay = 0;
  double retry_at = 0;
  {
    MutexLock lock(health_mutex_);
    ReceiverHealth& health = health_[n.receiver];
    health.consecutive_failures += 1;
    std::uniform_real_distribution<double> jitter(1 - options_.jitter_fraction,
                                                  1 + options_.jitter_fraction);
    delay = BackoffSeconds(options_, health.consecutive_failures) * jitter(rng_);
    health.retry_at = clock_.UnixSeconds() + delay;
    retry_at = health.retry_at;
  }
  Status scheduled = outbox_.ScheduleRetry(n.id, attempts, retry_at, error);
  if (!scheduled.ok()) logger_->error("alert outbox: {}", scheduled.ToString());
  logger_->warn("alert notification {} to receiver '{}' attempt {} failed: {}; retry in {:.3g} s",
                n.id, n.receiver, attempts, error, delay);
  ++stats.retried;
}

Result<DeliveryPassStats> DeliveryWorker::Pass(const std::string& receiver_filter) {
  DeliveryPassStats stats;
  const double now = clock_.UnixSeconds();
  FULCRUM_ASSIGN_OR_RETURN(std::vector<Notification> due,
                           outbox_.FetchDue(now, options_.batch_size, receiver_filter));
  for (const Notification& n : due) {
    auto receiver = std::find_if(receivers_.begin(), receivers_.end(),
                                 [&](const Receiver& r) { return r.name == n.receiver; });
    if (receiver == receivers_.end()) {
      FULCRUM_RETURN_IF_ERROR(outbox_.ScheduleRetry(
          n.id, n.attempts, now + options_.max_backoff_seconds, "receiver not configured"));
      logger_->warn("alert notification {}: receiver '{}' is not configured; kept for later", n.id,
                    n.receiver);
      ++stats.retried;
      continue;
    }
    if (now - n.created_at > options_.max_age_seconds) {
      HandleFailure(n, "older than max_age", /*permanent=*/true, stats);
      continue;
    }
    // A receiver in backoff: the notification waits with it (no attempt counted), which also
    // keeps a receiver's notifications in creation order.
    double backoff_until = 0;
    {
      MutexLock lock(health_mutex_);
      if (auto health = health_.find(n.receiver); health != health_.end()) {
        backoff_until = health->second.retry_at;
      }
    }
    if (backoff_until > clock_.UnixSeconds()) {
      FULCRUM_RETURN_IF_ERROR(
          outbox_.ScheduleRetry(n.id, n.attempts, backoff_until, "waiting: receiver unavailable"));
      ++stats.retried;
      continue;
    }
    Result<HttpRequest> request = MakeRequest(*receiver, n);
    if (!request.ok()) {
      HandleFailure(n, request.status().message(), /*permanent=*/true, stats);
      continue;
    }
    ++stats.attempted;
    HttpResponse response = poster_.Post(*request);
    std::optional<std::string> vendor_error;
    if (response.status >= 200 && response.status < 300) {
      vendor_error = VendorError(receiver->format, response.body);
    }
    if (vendor_error) {
      // HTTP said yes, the vendor said no: not delivered. Retried with the receiver's backoff
      // (a rate limit clears), failed for good once the same refusal repeats.
      const bool give_up = n.attempts + 1 >= options_.max_vendor_error_attempts;
      HandleFailure(n, *vendor_error, give_up, stats);
      continue;
    }
    if (response.status >= 200 && response.status < 300) {
      {
        MutexLock lock(health_mutex_);
        health_.erase(n.receiver);
      }
      FULCRUM_RETURN_IF_ERROR(outbox_.MarkDelivered(n.id, clock_.UnixSeconds()));
      logger_->info("alert notification {} delivered to receiver '{}' ({}) after {} attempt(s)",
                    n.id, n.receiver, RedactUrl(receiver->url), n.attempts + 1);
      ++stats.delivered;
      continue;
    }
    const std::string error = response.status == 0 ? "transport error: " + response.error
                                                   : "HTTP " + std::to_string(response.status);
    HandleFailure(n, error, !IsRetryableStatus(response.status), stats);
  }
  return stats;
}

void DeliveryWorker::Start() {
  MutexLock lock(mutex_);
  if (!threads_.empty()) return;
  stop_requested_ = false;
  // One worker per receiver name: a receiver that hangs until its timeout holds only its own.
  std::set<std::string> names;
  for (const Receiver& r : receivers_) names.insert(r.name);
  for (const std::string& name : names) threads_.emplace_back([this, name] { Loop(name); });
}

void DeliveryWorker::Stop() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mutex_);
    stop_requested_ = true;
    threads.swap(threads_);
  }
  wake_.SignalAll();
  for (std::thread& t : threads) t.join();
}

void DeliveryWorker::Wake() {
  {
    MutexLock lock(mutex_);
    ++wake_generation_;
  }
  wake_.SignalAll();
}

void DeliveryWorker::Loop(const std::string& receiver) {
  try {
    uint64_t seen_generation = 0;
    {
      MutexLock lock(mutex_);
      seen_generation = wake_generation_;
    }
    while (true) {
      Result<DeliveryPassStats> pass = RunOnceFor(receiver);
      if (!pass.ok()) {
        logger_->error("alert delivery pass for receiver '{}': {}", receiver,
                       pass.status().ToString());
      }
      const bool full_batch = pass.ok() && pass->attempted + pass->retried >= options_.batch_size;
      MutexLock lock(mutex_);
      if (stop_requested_) return;
      if (!full_batch && wake_generation_ == seen_generation) {
        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(options_.idle_poll_seconds));
        while (!stop_requested_ && wake_generation_ == seen_generation && WaitForWake(deadline)) {
        }
      }
      seen_generation = wake_generation_;
      if (stop_requested_) return;
    }
  } catch (const std::exception& e) {  // thread entry: the edge where exceptions stop
    logger_->critical("alert delivery thread for receiver '{}' stopped: {}", receiver, e.what());
  }
}

}  // namespace fulcrum::alert
