#include "alert/delivery.h"

#include <curl/curl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <string_view>

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

// Keeps the Retry-After header of the final response (a 1xx's headers come first).
size_t KeepHeader(char* data, size_t size, size_t count, void* user) {
  auto* response = static_cast<HttpResponse*>(user);
  const size_t bytes = size * count;
  std::string_view line(data, bytes);
  if (line.starts_with("HTTP/")) response->retry_after.clear();  // a new response's headers
  constexpr std::string_view kName = "retry-after:";
  if (line.size() > kName.size()) {
    std::string name(line.substr(0, kName.size()));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == kName) {
      std::string_view value = line.substr(kName.size());
      while (!value.empty() && std::isspace(static_cast<unsigned char>(value.front()))) {
        value.remove_prefix(1);
      }
      while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) {
        value.remove_suffix(1);
      }
      response->retry_after = std::string(value.substr(0, 128));
    }
  }
  return bytes;
}

bool IsRetryableStatus(int status) {
  return status == 0 || status == 408 || status == 429 || status >= 500;
}

// RFC 9110 sec. 15.4: 301, 302, 307 and 308 name the resource's new place; 303 See Other points
// at a different resource to GET, which a webhook POST must not become.
bool IsFollowedRedirect(int status) {
  return status == 301 || status == 302 || status == 307 || status == 308;
}

struct UrlOrigin {
  std::string scheme, host, port;
};

// Scheme, host and port (the scheme's default when absent) as libcurl parses `url`.
std::optional<UrlOrigin> OriginOf(const std::string& url) {
  CURLU* parsed = curl_url();
  if (parsed == nullptr) return std::nullopt;
  std::optional<UrlOrigin> origin;
  if (curl_url_set(parsed, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    char* scheme = nullptr;
    char* host = nullptr;
    char* port = nullptr;
    curl_url_get(parsed, CURLUPART_SCHEME, &scheme, 0);
    curl_url_get(parsed, CURLUPART_HOST, &host, 0);
    curl_url_get(parsed, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
    if (scheme != nullptr && host != nullptr) {
      std::string h = host;
      for (char& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      origin = UrlOrigin{scheme, h, port != nullptr ? port : ""};
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
  }
  curl_url_cleanup(parsed);
  return origin;
}

// A wall-clock jump between passes larger than this is a step (NTP slews at most 500 ppm,
// ntpd(8); passes are at most a request timeout apart).
constexpr double kClockStepSeconds = 1;

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
  // CURLOPT_HEADERFUNCTION(3): called once per header line, status lines included.
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &KeepHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response);
  CURLcode code = curl_easy_perform(curl);
  if (code == CURLE_OK) {
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    response.status = static_cast<int>(status);
    // CURLINFO_REDIRECT_URL(3): the URL a redirect would take, made absolute, when
    // CURLOPT_FOLLOWLOCATION is off.
    char* location = nullptr;
    if (status >= 300 && status < 400 &&
        curl_easy_getinfo(curl, CURLINFO_REDIRECT_URL, &location) == CURLE_OK &&
        location != nullptr) {
      response.redirect_url = location;
    }
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

std::optional<double> RetryAfterSeconds(std::string_view value, double now_unix) {
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (value.size() > 9) return 1e9;  // absurdly long: capped by the caller
    return std::stod(std::string(value));
  }
  // curl_getdate(3) reads the three HTTP-date forms (IMF-fixdate, RFC 850, asctime) that
  // RFC 9110 sec. 5.6.7 requires a recipient to accept; -1 when it cannot.
  const time_t when = curl_getdate(std::string(value).c_str(), nullptr);
  if (when == -1) return std::nullopt;
  return std::max(0.0, static_cast<double>(when) - now_unix);
}

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

double DeliveryWorker::AgeSeconds(const Notification& n, double now_mono) const {
  if (n.touched_mono < 0) return n.age_seconds;
  return n.age_seconds + std::max(0.0, now_mono - n.touched_mono);
}

double DeliveryWorker::ReceiverWaitUntil(const std::string& receiver) {
  MutexLock lock(health_mutex_);
  auto health = health_.find(receiver);
  return health == health_.end() ? 0 : health->second.retry_at;
}

void DeliveryWorker::NoteClockStep() {
  const double offset = clock_.UnixSeconds() - clock_.MonotonicSeconds();
  MutexLock lock(health_mutex_);
  if (clock_offset_ && std::abs(offset - *clock_offset_) > kClockStepSeconds) {
    logger_->warn(
        "the wall clock stepped by {:+.0f} s; alert retries run on the monotonic clock and are "
        "not affected (stored times are wall-clock)",
        offset - *clock_offset_);
  }
  clock_offset_ = offset;
}

DeliveryWorker::Outcome DeliveryWorker::Classify(const Receiver& receiver, HttpResponse response,
                                                 const Notification& n) const {
  Outcome outcome;
  const int status = response.status;
  if (status >= 200 && status < 300) {
    if (auto vendor_error = VendorError(receiver.format, response.body)) {
      // HTTP said yes, the vendor said no: not delivered. Retried (a rate limit clears), failed
      // for good once the same refusal repeats.
      outcome.error = *vendor_error;
      outcome.permanent = n.attempts + 1 >= options_.max_vendor_error_attempts;
    }
  } else if (status == 0) {
    outcome.error = "transport error: " + response.error;
    outcome.receiver_wide = true;  // unreachable: no point trying its other notifications now
  } else {
    outcome.error = "HTTP " + std::to_string(status);
    outcome.permanent = !IsRetryableStatus(status);
    // RFC 9110 sec. 10.2.3: Retry-After with 503 and 429 (RFC 6585 sec. 4); Slack's rate limits
    // (api.slack.com/docs/rate-limits) answer 429 with it and require it be honoured.
    if ((status == 429 || status == 503) && !response.retry_after.empty()) {
      if (auto wait = RetryAfterSeconds(response.retry_after, clock_.UnixSeconds())) {
        outcome.retry_after = std::min(*wait, options_.max_age_seconds);
        outcome.error += fmt::format(" (Retry-After {:.0f} s)", *outcome.retry_after);
      }
    }
  }
  outcome.response = std::move(response);
  return outcome;
}

DeliveryWorker::Outcome DeliveryWorker::Send(const Receiver& receiver, HttpRequest request,
                                             const Notification& n) {
  for (int hops = 0;; ++hops) {
    HttpResponse response = poster_.Post(request);
    const int status = response.status;
    if (status == 303) {
      Outcome outcome;
      outcome.error = "HTTP 303 See Other: the receiver wants a GET elsewhere (not followed)";
      outcome.permanent = true;
      return outcome;
    }
    if (!IsFollowedRedirect(status)) return Classify(receiver, std::move(response), n);
    Outcome outcome;
    outcome.permanent = true;
    outcome.error = "HTTP " + std::to_string(status);
    std::optional<UrlOrigin> from = OriginOf(request.url);
    std::optional<UrlOrigin> to = OriginOf(response.redirect_url);
    if (response.redirect_url.empty() || !from || !to) {
      outcome.error += " without a usable Location";
      return outcome;
    }
    if (hops == kMaxRedirects) {
      outcome.error += fmt::format(": more than {} redirects (not followed)", kMaxRedirects);
      return outcome;
    }
    if (to->scheme != from->scheme) {
      outcome.error += " to " + to->scheme + " from " + from->scheme + " (not followed)";
      return outcome;
    }
    if (to->host != from->host || to->port != from->port) {
      // The credential is the receiver's, not the new host's.
      std::erase_if(request.headers, [](const auto& h) { return h.first == "Authorization"; });
    }
    logger_->info("alert notification {} to receiver '{}': HTTP {} redirect to {}", n.id,
                  n.receiver, status, RedactUrl(response.redirect_url));
    request.url = std::move(response.redirect_url);
  }
}

void DeliveryWorker::HandleFailure(const Notification& n, const Outcome& outcome,
                                   DeliveryPassStats& stats) {
  const int attempts = n.attempts + 1;
  if (outcome.permanent) {
    Status marked = outbox_.MarkFailed(n.id, attempts, outcome.error);
    if (!marked.ok()) logger_->error("alert outbox: {}", marked.ToString());
    logger_->error("alert notification {} to receiver '{}' failed for good after {} attempt(s): {}",
                   n.id, n.receiver, attempts, outcome.error);
    ++stats.failed;
    return;
  }
  const double mono = clock_.MonotonicSeconds();
  double delay = 0;
  {
    MutexLock lock(health_mutex_);
    ReceiverHealth& health = health_[n.receiver];
    // The same notification failing again says nothing new about the receiver.
    if (health.last_failed_id != n.id || outcome.receiver_wide) health.consecutive_failures += 1;
    health.last_failed_id = n.id;
    std::uniform_real_distribution<double> jitter(1 - options_.jitter_fraction,
                                                  1 + options_.jitter_fraction);
    // The notification's own backoff: one that keeps failing never holds back the others.
    delay = outcome.retry_after ? *outcome.retry_after
                                : BackoffSeconds(options_, attempts) * jitter(rng_);
    // The receiver as a whole: unreachable, asking to wait, or failing two different
    // notifications in a row. Then an outage costs one POST per backoff period, not one per
    // notification.
    if (outcome.retry_after) {
      health.retry_at = std::max(health.retry_at, mono + *outcome.retry_after);
    } else if (outcome.receiver_wide || health.consecutive_failures >= 2) {
      const int level = health.consecutive_failures - (outcome.receiver_wide ? 0 : 1);
      health.retry_at = mono + BackoffSeconds(options_, level) * jitter(rng_);
    }
  }
  Notification next = n;
  next.attempts = attempts;
  next.last_error = outcome.error;
  next.age_seconds = AgeSeconds(n, mono);
  next.touched_mono = mono;
  next.due_mono = mono + delay;
  next.next_attempt_at = clock_.UnixSeconds() + delay;
  Status scheduled = outbox_.ScheduleRetry(next);
  if (!scheduled.ok()) logger_->error("alert outbox: {}", scheduled.ToString());
  logger_->warn("alert notification {} to receiver '{}' attempt {} failed: {}; retry in {:.3g} s",
                n.id, n.receiver, attempts, outcome.error, delay);
  ++stats.retried;
}

void DeliveryWorker::Attempt(const Receiver& receiver, const Notification& n,
                             DeliveryPassStats& stats) {
  Result<HttpRequest> request = MakeRequest(receiver, n);
  if (!request.ok()) {
    Outcome outcome;
    outcome.error = request.status().message();
    outcome.permanent = true;
    HandleFailure(n, outcome, stats);
    return;
  }
  ++stats.attempted;
  Outcome outcome = Send(receiver, std::move(*request), n);
  if (!outcome.error.empty()) {
    HandleFailure(n, outcome, stats);
    return;
  }
  {
    MutexLock lock(health_mutex_);
    health_.erase(n.receiver);
  }
  Status marked = outbox_.MarkDelivered(n.id, clock_.UnixSeconds());
  if (!marked.ok()) logger_->error("alert outbox: {}", marked.ToString());
  logger_->info("alert notification {} delivered to receiver '{}' ({}) after {} attempt(s)", n.id,
                n.receiver, RedactUrl(receiver.url), n.attempts + 1);
  ++stats.delivered;
}

Result<DeliveryPassStats> DeliveryWorker::Pass(const std::string& receiver_filter) {
  DeliveryPassStats stats;
  NoteClockStep();
  const double now = clock_.MonotonicSeconds();
  if (!receiver_filter.empty() && ReceiverWaitUntil(receiver_filter) > now) return stats;
  FULCRUM_ASSIGN_OR_RETURN(std::vector<Notification> due,
                           outbox_.FetchDue(now, options_.batch_size, receiver_filter));
  // The least-tried first (stable: otherwise in enqueue order): a new alert, or the probe of a
  // receiver in backoff, does not queue behind notifications that keep failing.
  std::stable_sort(due.begin(), due.end(), [](const Notification& a, const Notification& b) {
    return a.attempts < b.attempts;
  });
  for (const Notification& n : due) {
    auto receiver = std::find_if(receivers_.begin(), receivers_.end(),
                                 [&](const Receiver& r) { return r.name == n.receiver; });
    if (receiver == receivers_.end()) {
      Notification later = n;
      later.due_mono = now + options_.max_backoff_seconds;
      later.next_attempt_at = clock_.UnixSeconds() + options_.max_backoff_seconds;
      later.last_error = "receiver not configured";
      FULCRUM_RETURN_IF_ERROR(outbox_.ScheduleRetry(later));
      logger_->warn("alert notification {}: receiver '{}' is not configured; kept for later", n.id,
                    n.receiver);
      ++stats.retried;
      continue;
    }
    const double age = AgeSeconds(n, clock_.MonotonicSeconds());
    if (age > options_.max_age_seconds) {
      Outcome outcome;
      outcome.error = fmt::format("pending for {:.0f} s, longer than max_age", age);
      outcome.permanent = true;
      HandleFailure(n, outcome, stats);
      continue;
    }
    // A receiver in backoff: the notification waits (no attempt counted, nothing rewritten).
    if (ReceiverWaitUntil(n.receiver) > clock_.MonotonicSeconds()) continue;
    Attempt(*receiver, n, stats);
  }
  return stats;
}

void DeliveryWorker::Start() {
  MutexLock lock(mutex_);
  if (!threads_.empty()) return;
  // Stamps of an earlier process (or boot) mean nothing on this monotonic clock.
  Status rebased = outbox_.Rebase(clock_.MonotonicSeconds());
  if (!rebased.ok()) logger_->error("alert outbox: {}", rebased.ToString());
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
