// GCC 12 reports a false -Wmaybe-uninitialized inside std::regex's std::function under
// -fsanitize (the asan preset); it must be silenced before any header is read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "server/http_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <optional>
#include <regex>
#include <set>
#include <string_view>

#include "core/mutex.h"
#include "core/parse.h"
#include "server/dashboard.h"
#include "server/http_front.h"
#include "server/metrics.h"
#include "store/job_view.h"
#include "store/jobs.h"

namespace fulcrum::server {

using nlohmann::json;

Result<std::pair<std::string, int>> ParseListen(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::InvalidInput("listen address '" + text +
                                "': expected HOST:PORT, e.g. 127.0.0.1:9400");
  }
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  auto port = ParseInt(text.substr(colon + 1));
  if (!port.ok() || *port < 0 || *port > 65535) {
    return Status::InvalidInput("listen address '" + text + "': port must be 0-65535");
  }
  return std::make_pair(host, static_cast<int>(*port));
}

namespace {

json Opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// Request bodies larger than this are refused (413) before they are read: the only endpoint
// with a body (POST /v1/idle/cancel) ignores it.
constexpr size_t kMaxBodyBytes = 64 * 1024;
// The longest look-back and the finest bucket /v1/series accepts.
constexpr double kMaxSeriesSeconds = 10 * 366 * 86400.0;
constexpr double kMinStepSeconds = 0.001;

void Reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  // Replace, never throw: a reason may quote request text that is not valid UTF-8.
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void Error(httplib::Response& res, int status, const std::string& reason) {
  Reply(res, status, {{"error", reason}});
}

// Constant-time comparison of the presented token with the configured one.
bool TokenMatches(const std::string& presented, const std::string& expected) {
  if (presented.size() != expected.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned char>(presented[i] ^ expected[i]);
  }
  return diff == 0;
}

// True when `text` is well-formed UTF-8 (no overlongs, surrogates or code points > U+10FFFF).
bool IsUtf8(std::string_view text) {
  static constexpr uint32_t kMinCodePoint[] = {0, 0x80, 0x800, 0x10000};
  size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      n = 1, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= text.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (next & 0x3f);
    }
    if (cp < kMinCodePoint[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

// "host:port", "[v6]:port" or "host" -> the lower-cased host without brackets or port.
std::string HostOfHeader(std::string_view value) {
  std::string host(value);
  if (!host.empty() && host.front() == '[') {
    size_t close = host.find(']');
    host = close == std::string::npos ? host : host.substr(1, close - 1);
  } else if (size_t colon = host.rfind(':');
             colon != std::string::npos && host.find(':') == colon) {
    host = host.substr(0, colon);
  }
  for (char& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return host;
}

// What the head check refuses, before httplib parses the request.
struct Refusal {
  int status;
  std::string reason;
};

// RFC 9110 sec. 9 (GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE) and PATCH (RFC 5789):
// a path that exists answers these 405 with Allow; any other method is not implemented (501).
bool KnownMethod(std::string_view method) {
  static constexpr std::string_view kMethods[] = {"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                                  "CONNECT", "OPTIONS", "TRACE", "PATCH"};
  return std::find(std::begin(kMethods), std::end(kMethods), method) != std::end(kMethods);
}

// tchar of RFC 9110 sec. 5.6.2: a method is a token.
bool IsToken(std::string_view text) {
  static constexpr std::string_view kSymbols = "!#$%&'*+-.^_`|~";
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || kSymbols.find(c) != kSymbols.npos;
  });
}

// The head checks cpp-httplib 0.11 lacks (its own failures all read "400"): a total head cap,
// the method, the version, duplicate Host, the line length. Anything else malformed is left to
// httplib (400).
std::optional<Refusal> CheckRequestHead(std::string_view request) {
  size_t end = RequestHeadEnd(request);
  if (end == std::string_view::npos ? request.size() > kMaxRequestHeadBytes
                                    : end > kMaxRequestHeadBytes) {
    // RFC 6585 sec. 5: 431 when the header fields, individually or together, are too large.
    return Refusal{431, "the request headers are larger than " +
                            std::to_string(kMaxRequestHeadBytes) + " bytes in total"};
  }
  if (end == std::string_view::npos) {
    return Refusal{400,
                   "incomplete request: the connection ended before the empty line that "
                   "ends the headers"};
  }
  std::string_view head = request.substr(0, end);
  std::string_view line = head.substr(0, head.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  size_t first = line.find(' ');
  size_t last = line.rfind(' ');
  if (first != std::string_view::npos && last > first) {
    std::string_view method = line.substr(0, first);
    std::string_view version = line.substr(last + 1);
    // RFC 9112 sec. 2.3: HTTP-version = "HTTP/" DIGIT "." DIGIT; this server speaks 1.0 and 1.1
    // (RFC 9110 sec. 15.6.6: 505 for a major version it does not support).
    bool well_formed = version.size() == 8 && version.starts_with("HTTP/") &&
                       std::isdigit(static_cast<unsigned char>(version[5])) && version[6] == '.' &&
                       std::isdigit(static_cast<unsigned char>(version[7]));
    if (well_formed && version != "HTTP/1.1" && version != "HTTP/1.0") {
      return Refusal{505, "HTTP version " + std::string(version) +
                              " is not supported (HTTP/1.1 and HTTP/1.0 are)"};
    }
    // RFC 9110 sec. 9.1: methods are case-sensitive; sec. 15.6.2: 501 for one not recognized.
    if (IsToken(method) && !KnownMethod(method)) {
      return Refusal{501, "method " + std::string(method) + " is not implemented"};
    }
  }
  int hosts = 0;
  ForEachHeaderField(head, [&](std::string_view name, std::string_view) {
    if (HeaderNameIs(name, "host")) ++hosts;
  });
  if (hosts > 1) {  // RFC 9112 sec. 3.2: a request with more than one Host field gets 400
    return Refusal{400, "more than one Host header"};
  }
  for (size_t at = head.find('\n'); at < head.size();) {
    size_t next = head.find('\n', at + 1);
    size_t length = (next == std::string_view::npos ? head.size() : next) - at;
    if (length > CPPHTTPLIB_HEADER_MAX_LENGTH) {
      return Refusal{431, "a request header line is longer than " +
                              std::to_string(CPPHTTPLIB_HEADER_MAX_LENGTH) + " bytes"};
    }
    at = next == std::string_view::npos ? head.size() : next;
  }
  return std::nullopt;
}

// The answer to a refused head, as httplib would write an error of ours: status line, the JSON
// body of docs/API.md "Status codes" (headers only for a HEAD, RFC 9110 sec. 9.3.2), no
// keep-alive.
std::string RawAnswer(int status, const std::string& reason, bool head_request) {
  // Reason phrases: RFC 9110 sec. 15.5.1 (400), RFC 6585 sec. 5 (431), RFC 9110 sec. 15.6.2
  // (501) and 15.6.6 (505).
  const char* phrase = status == 431   ? "Request Header Fields Too Large"
                       : status == 501 ? "Not Implemented"
                       : status == 505 ? "HTTP Version Not Supported"
                                       : "Bad Request";
  std::string body = json{{"error", reason}}.dump(-1, ' ', false, json::error_handler_t::replace);
  return "HTTP/1.1 " + std::to_string(status) + " " + phrase +
         "\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + (head_request ? "" : body);
}

// httplib's server with its per-connection request processing reachable without a socket
// (process_request is protected), as cpp-httplib's own fuzzer drives it.
class RawServer final : public httplib::Server {
 public:
  std::string Serve(std::string_view request, const std::string& peer_ip, int peer_port);
};

// A Stream over a request held in memory; what the server writes is collected.
class MemoryStream final : public httplib::Stream {
 public:
  MemoryStream(std::string_view input, std::string peer_ip, int peer_port)
      : input_(input), peer_ip_(std::move(peer_ip)), peer_port_(peer_port) {}
  bool is_readable() const override { return true; }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    size_t n = std::min(size, input_.size() - offset_);
    std::copy_n(input_.data() + offset_, n, ptr);
    offset_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    output_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = peer_ip_;
    port = peer_port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 0;
  }
  socket_t socket() const override { return INVALID_SOCKET; }
  const std::string& output() const { return output_; }

 private:
  std::string_view input_;
  std::string peer_ip_;
  int peer_port_ = 0;
  size_t offset_ = 0;
  std::string output_;
};

std::string RawServer::Serve(std::string_view request, const std::string& peer_ip, int peer_port) {
  MemoryStream stream(request, peer_ip, peer_port);
  bool connection_closed = false;
  process_request(stream, /*close_connection=*/true, connection_closed, nullptr);
  return stream.output();
}

}  // namespace

struct AgentServer::Impl {
  ServerOptions options;
  AgentStateView& live;
  const Clock& clock;
  double started_monotonic;
  RawServer http;
  std::unique_ptr<HttpFront> front;  // set by Start()
  std::string listen_host;           // lower-cased host of options.listen (an allowed Host name)
  Mutex db_mutex;
  std::optional<store::AgentDb> db GUARDED_BY(db_mutex);  // read-only connection

  Impl(ServerOptions o, AgentStateView& l, const Clock& c)
      : options(std::move(o)), live(l), clock(c), started_monotonic(c.MonotonicSeconds()) {}

  // Runs `fn` with the read-only agent.db connection (opened on first use).
  template <typename Fn>
  auto WithDb(Fn fn) -> decltype(fn(std::declval<store::AgentDb&>())) {
    MutexLock lock(db_mutex);
    if (!db) {
      auto opened = store::AgentDb::OpenInDataDir(options.data_dir, /*read_only=*/true);
      if (!opened.ok()) return opened.status();
      db = std::move(*opened);
    }
    return fn(*db);
  }

  bool Authorized(const httplib::Request& req, httplib::Response& res) {
    if (options.token.empty()) {
      Error(res, 403, "this agent has no token configured; state-changing endpoints are disabled");
      return false;
    }
    std::string header = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (header.rfind(prefix, 0) != 0 ||
        !TokenMatches(header.substr(prefix.size()), options.token)) {
      res.set_header("WWW-Authenticate", "Bearer");
      Error(res, 401, "missing or wrong bearer token (Authorization: Bearer <token>)");
      return false;
    }
    return true;
  }

  // "degraded" with the reason while the agent runs degraded (e.g. agent.db refuses writes and
  // notifications are sent from memory); still 200: the agent samples and alerts.
  void Health(const httplib::Request&, httplib::Response& res) {
    const std::string degraded = live.Counters().degraded;
    Reply(res, 200,
          {{"status", degraded.empty() ? "ok" : "degraded"},
           {"reason", degraded.empty() ? json(nullptr) : json(degraded)},
           {"version", FULCRUM_VERSION},
           {"hostname", options.hostname},
           {"uptime_seconds", clock.MonotonicSeconds() - started_monotonic},
           {"source", options.source_kind},
           {"interval_seconds", options.interval_seconds},
           {"gpu_count", options.gpu_count}});
  }

  void Gpus(const httplib::Request&, httplib::Response& res) {
    json gpus = json::array();
    for (const auto& s : live.Latest()) gpus.push_back(telemetry::SampleToJson(s));
    Reply(res, 200, {{"gpus", std::move(gpus)}});
  }

  void Series(const httplib::Request& req, httplib::Response& res) {
    if (!req.has_param("metric")) return Error(res, 400, "missing query parameter 'metric'");
    std::string metric = req.get_param_value("metric");
    if (telemetry::FindMetric(metric) == nullptr &&
        telemetry::FindRenamedMetric(metric) == nullptr) {  // old names answer (README changelog)
      return Error(res, 400, "unknown metric '" + metric + "'; see docs/API.md for the list");
    }
    std::optional<int> gpu;
    if (req.has_param("gpu")) {
      auto g = ParseInt(req.get_param_value("gpu"));
      if (!g.ok() || *g < 0) return Error(res, 400, "'gpu' must be a GPU index >= 0");
      gpu = static_cast<int>(*g);
    }
    double since = 900;
    if (req.has_param("since")) {
      auto s = ParseDurationSeconds(req.get_param_value("since"));
      if (!s.ok() || !(*s > 0 && *s <= kMaxSeriesSeconds)) {
        return Error(res, 400, "'since' must be a look-back of more than 0 s and at most 10 years");
      }
      since = *s;
    }
    std::optional<double> step;
    if (req.has_param("step")) {
      auto s = ParseDurationSeconds(req.get_param_value("step"));
      if (!s.ok() || !(*s >= kMinStepSeconds && *s <= kMaxSeriesSeconds)) {
        return Error(res, 400, "'step' must be a bucket width from 1ms to 10 years");
      }
      step = *s;
    }
    double now = clock.UnixSeconds();
    auto series = WithDb([&](store::AgentDb& db) {
      return db.QuerySeries(metric, gpu, now - since, now, step, options.retention);
    });
    if (!series.ok()) return Error(res, 503, series.status().message());
    json list = json::array();
    for (const auto& s : *series) {
      json points = json::array();
      for (const auto& [t, v] : s.points) points.push_back({t, v});
      list.push_back({{"gpu", s.gpu}, {"points", std::move(points)}});
    }
    Reply(res, 200, {{"metric", metric}, {"series", std::move(list)}});
  }

  void Alerts(const httplib::Request&, httplib::Response& res) {
    double since = clock.UnixSeconds() - 24 * 3600.0;
    auto alerts = WithDb([&](store::AgentDb& db) { return db.ListAlerts(since); });
    if (!alerts.ok()) return Error(res, 503, alerts.status().message());
    json list = json::array();
    for (const auto& a : *alerts) {
      json labels = json::parse(a.labels_json, nullptr, false);
      list.push_back({{"id", a.id},
                      {"name", a.name},
                      {"status", a.status},
                      {"severity", a.severity},
                      {"gpu", a.gpu >= 0 ? json(a.gpu) : json(nullptr)},
                      {"value", a.value},
                      {"threshold", a.threshold},
                      {"started_at", a.started_at},
                      {"fired_at", Opt(a.fired_at)},
                      {"resolved_at", Opt(a.resolved_at)},
                      {"summary", a.summary},
                      {"fingerprint", a.fingerprint},
                      {"labels", labels.is_discarded() ? json::object() : labels}});
    }
    Reply(res, 200, {{"alerts", std::move(list)}});
  }

  void Host(const httplib::Request&, httplib::Response& res) {
    HostInfo h = live.Host();
    Reply(res, 200,
          {{"hostname", options.hostname},
           {"cpu_utilization_pct", Opt(h.cpu_utilization_pct)},
           {"memory_used_bytes", Opt(h.memory_used_bytes)},
           {"memory_total_bytes", Opt(h.memory_total_bytes)},
           {"disk_path", h.disk_path},
           {"disk_free_bytes", Opt(h.disk_free_bytes)},
           {"disk_total_bytes", Opt(h.disk_total_bytes)}});
  }

  void Jobs(const httplib::Request&, httplib::Response& res) {
    json list = json::array();
    json alerts = json::array();
    auto jobs_db = store::JobsDb::OpenInDataDir(options.data_dir, /*read_only=*/true);
    if (!jobs_db.ok() && jobs_db.status().code() != StatusCode::kNotFound) {
      return Error(res, 503, jobs_db.status().message());
    }
    if (jobs_db.ok()) {
      auto jobs = jobs_db->ListJobs();
      if (!jobs.ok()) return Error(res, 503, jobs.status().message());
      double now = clock.UnixSeconds();
      for (const auto& j : *jobs) list.push_back(store::JobJson(j, now));
      // The supervisors' own alerts of the last 24 h, newest first (the jobs panel shows them).
      auto recent = jobs_db->ListAlerts(now - 24 * 3600);
      if (!recent.ok()) return Error(res, 503, recent.status().message());
      for (const auto& a : *recent) {
        alerts.push_back({{"id", a.id},
                          {"job", a.job_id},
                          {"name", a.name},
                          {"severity", a.severity},
                          {"summary", a.summary},
                          {"at", a.at}});
      }
    }
    Reply(res, 200, {{"jobs", std::move(list)}, {"alerts", std::move(alerts)}});
  }

  void Idle(const httplib::Request&, httplib::Response& res) {
    IdleStatus s = live.Idle();
    Reply(res, 200,
          {{"enabled", s.enabled},
           {"dry_run", s.dry_run},
           {"idle", s.idle},
           {"idle_seconds", s.idle_seconds},
           {"threshold_seconds", s.threshold_seconds},
           {"release_in_seconds", Opt(s.release_in_seconds)},
           {"warned", s.warned},
           {"released", s.released}});
  }

  void IdleCancel(const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res)) return;
    live.RequestIdleCancel();
    Reply(res, 200, {{"ok", true}});
  }

  void Metrics(const httplib::Request&, httplib::Response& res) {
    res.set_content(RenderMetrics(live.Latest(), options.hostname, live.Counters(), live.Idle(),
                                  options.metrics_names),
                    "text/plain; version=0.0.4; charset=utf-8");
  }

  void Dashboard(const httplib::Request& req, httplib::Response& res) {
    auto file = FindDashboardFile(req.path);
    if (!file) return Error(res, 404, "no such page: " + req.path);
    // The page loads only from the agent (the browser enforces it), is never framed, and is
    // revalidated so a new binary's assets replace cached ones.
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
                   "frame-ancestors 'none'");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Cache-Control", "no-cache");
    res.set_content(std::string(file->body), file->content_type);
  }

  using Handler = void (Impl::*)(const httplib::Request&, httplib::Response&);
  struct Route {
    std::string method;
    std::regex pattern;  // the whole path must match (as httplib matches it)
  };
  std::vector<Route> routes;

  // The edge: every callback httplib makes into this server (pre-routing, handlers, the error
  // handler) runs through here, so no exception escapes into httplib's worker thread (an
  // escape there ends the process). A throw answers 500 with the reason.
  template <typename Fn>
  static void Guarded(httplib::Response& res, Fn&& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      spdlog::error("HTTP handler failed: {}", e.what());
      Error(res, 500, std::string("internal error: ") + e.what());
    } catch (...) {
      spdlog::error("HTTP handler failed: unknown exception");
      Error(res, 500, "internal error");
    }
  }

  void Add(const std::string& method, const std::string& pattern, Handler handler) {
    routes.push_back({method, std::regex(pattern)});
    auto run = [this, handler](const httplib::Request& req, httplib::Response& res) {
      Guarded(res, [&] { (this->*handler)(req, res); });
    };
    if (method == "GET") {
      http.Get(pattern, run);
    } else {
      http.Post(pattern, run);
    }
  }

  // Methods of the routes whose pattern matches `path` (GET implies HEAD); empty when none does.
  std::set<std::string> AllowedMethods(const std::string& path) const {
    std::set<std::string> methods;
    for (const Route& r : routes) {
      if (!std::regex_match(path, r.pattern)) continue;
      methods.insert(r.method);
      if (r.method == "GET") methods.insert("HEAD");
    }
    return methods;
  }

  bool HostAllowed(const httplib::Request& req) const {
    // HTTP/1.0 clients may omit Host; a browser (the DNS-rebinding vector) always sends it.
    if (!req.has_header("Host")) return true;
    std::string host = HostOfHeader(req.get_header_value("Host"));
    if (host == "localhost" || host == "127.0.0.1" || host == "::1" ||
        host.ends_with(".localhost")) {
      return true;
    }
    if (host == listen_host) return true;
    return std::find(options.allowed_hosts.begin(), options.allowed_hosts.end(), host) !=
           options.allowed_hosts.end();
  }

  // Runs before httplib reads a body or routes: refuses what no handler should see.
  httplib::Server::HandlerResponse PreRoute(const httplib::Request& req, httplib::Response& res) {
    if (!HostAllowed(req)) {
      Error(res, 403,
            "Host '" + req.get_header_value("Host") +
                "' is not an allowed name for this agent (loopback names and the listen "
                "address are; add others with --allowed-host NAME)");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!IsUtf8(req.path)) {
      Error(res, 400, "the request path is not valid UTF-8 after percent-decoding");
      return httplib::Server::HandlerResponse::Handled;
    }
    for (const auto& [key, value] : req.params) {
      if (!IsUtf8(key) || !IsUtf8(value)) {
        Error(res, 400, "a query parameter is not valid UTF-8 after percent-decoding");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    std::set<std::string> methods = AllowedMethods(req.path);
    if (!methods.empty() && methods.count(req.method) == 0) {
      std::string allowed;
      for (const std::string& m : methods) allowed += (allowed.empty() ? "" : ", ") + m;
      res.set_header("Allow", allowed);
      Error(res, 405,
            "method " + req.method + " not allowed on " + req.path + " (allowed: " + allowed + ")");
      return httplib::Server::HandlerResponse::Handled;
    }
    // Every body is capped whatever its type. A chunked body or one without a length would be
    // read until the client stops: refused before httplib reads it.
    if (req.has_header("Transfer-Encoding")) {
      Error(res, 411,
            "chunked request bodies are not accepted; send Content-Length (at most " +
                std::to_string(kMaxBodyBytes) + " bytes)");
      return httplib::Server::HandlerResponse::Handled;
    }
    bool has_length = req.has_header("Content-Length");
    if (has_length) {
      auto length = ParseInt(req.get_header_value("Content-Length"));
      if (!length.ok() || *length < 0) {
        Error(res, 400, "Content-Length is not a byte count");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (static_cast<uint64_t>(*length) > kMaxBodyBytes) {
        Error(res, 413,
              "request body of " + std::to_string(*length) + " bytes is larger than the limit of " +
                  std::to_string(kMaxBodyBytes) + " bytes");
        return httplib::Server::HandlerResponse::Handled;
      }
    } else if (req.method == "POST" || req.method == "PUT" || req.method == "PATCH" ||
               req.method == "DELETE") {
      Error(res, 411, "a " + req.method + " needs Content-Length (0 when it has no body)");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  }

  // Statuses httplib sets itself (no handler ran), each with its own reason.
  static void ErrorReason(const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    switch (res.status) {
      case 404:
        return Error(res, 404, "no such endpoint: " + req.method + " " + req.path);
      case 413:
        return Error(res, 413,
                     "request body larger than " + std::to_string(kMaxBodyBytes) + " bytes");
      case 414:
        return Error(res, 414,
                     "request line longer than " +
                         std::to_string(CPPHTTPLIB_REQUEST_URI_MAX_LENGTH) + " bytes");
      case 400:
        // The request line parsed (a method is set) but the header lines did not (REMOTE_ADDR
        // is added after them): CheckRequestHead passed, so a line lacks its CRLF.
        if (!req.method.empty() && !req.has_header("REMOTE_ADDR")) {
          return Error(res, 400,
                       "malformed request header line (each must end with CRLF and read "
                       "NAME: VALUE, RFC 9112 sec. 2.1 and 5)");
        }
        if (req.method.empty()) return Error(res, 400, "malformed HTTP request line");
        return Error(res, 400, "malformed HTTP request body (does Content-Length match it?)");
      default:
        return Error(res, res.status, "HTTP " + std::to_string(res.status));
    }
  }

  // A connection's request (or the raw-request seam's): the head is checked here, the rest
  // answered by httplib's parsing, the pre-routing checks and the routes.
  std::string Answer(std::string_view request, const std::string& peer_ip, int peer_port) {
    if (std::optional<Refusal> refusal = CheckRequestHead(request)) {
      return RawAnswer(refusal->status, refusal->reason, request.starts_with("HEAD "));
    }
    return http.Serve(request, peer_ip, peer_port);
  }

  void Routes() {
    Add("GET", "/v1/health", &Impl::Health);
    Add("GET", "/v1/gpus", &Impl::Gpus);
    Add("GET", "/v1/series", &Impl::Series);
    Add("GET", "/v1/alerts", &Impl::Alerts);
    Add("GET", "/v1/host", &Impl::Host);
    Add("GET", "/v1/jobs", &Impl::Jobs);
    Add("GET", "/v1/idle", &Impl::Idle);
    Add("POST", "/v1/idle/cancel", &Impl::IdleCancel);
    Add("GET", "/metrics", &Impl::Metrics);
    Add("GET", "/", &Impl::Dashboard);
    Add("GET", "/index.html", &Impl::Dashboard);
    Add("GET", R"(/assets/.*)", &Impl::Dashboard);
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      auto handled = httplib::Server::HandlerResponse::Handled;
      Guarded(res, [&] { handled = PreRoute(req, res); });
      return handled;
    });
    http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      Guarded(res, [&] { ErrorReason(req, res); });
    });
    // Handlers are guarded one by one (Add); this is the net under httplib's own routing code.
    http.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
          Guarded(res, [&] { std::rethrow_exception(ep); });
        });
  }
};

AgentServer::AgentServer(ServerOptions options, AgentStateView& live, const Clock& clock)
    : impl_(std::make_unique<Impl>(std::move(options), live, clock)) {
  impl_->http.set_payload_max_length(kMaxBodyBytes);
  impl_->Routes();
}

std::string AgentServer::ServeRawRequest(std::string_view request) {
  return impl_->Answer(request, "127.0.0.1", 0);
}

AgentServer::~AgentServer() { Stop(); }

Status AgentServer::Start() {
  FULCRUM_ASSIGN_OR_RETURN(auto address, ParseListen(impl_->options.listen));
  impl_->listen_host = HostOfHeader(
      address.first.find(':') != std::string::npos ? "[" + address.first + "]" : address.first);
  FrontLimits limits;
  limits.request_deadline_seconds = impl_->options.request_deadline_seconds;
  limits.max_connections = impl_->options.max_connections;
  limits.max_body_bytes = kMaxBodyBytes;
  limits.worker_threads = impl_->options.worker_threads;
  Impl* impl = impl_.get();
  auto front = std::make_unique<HttpFront>(
      limits, [impl](std::string_view request, const std::string& ip, int port) {
        return impl->Answer(request, ip, port);
      });
  FULCRUM_RETURN_IF_ERROR(front->Bind(address.first, address.second));
  front->Start();
  impl_->front = std::move(front);
  return Status::Ok();
}

void AgentServer::Stop() {
  if (impl_->front) impl_->front->Stop();
}

int AgentServer::port() const { return impl_->front ? impl_->front->port() : -1; }

}  // namespace fulcrum::server
