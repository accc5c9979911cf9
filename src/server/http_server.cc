#include "server/http_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <thread>

#include "agent/host.h"
#include "core/parse.h"
#include "server/dashboard.h"
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

void Reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
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

}  // namespace

struct AgentServer::Impl {
  ServerOptions options;
  agent::LiveState& live;
  const Clock& clock;
  double started_monotonic;
  httplib::Server http;
  std::thread thread;
  int port = 0;
  agent::HostProbe host_probe;
  std::mutex db_mutex;
  std::optional<store::AgentDb> db;  // read-only connection, guarded by db_mutex

  Impl(ServerOptions o, agent::LiveState& l, const Clock& c)
      : options(std::move(o)), live(l), clock(c), started_monotonic(c.MonotonicSeconds()) {}

  // Runs `fn` with the read-only agent.db connection (opened on first use).
  template <typename Fn>
  auto WithDb(Fn fn) -> decltype(fn(std::declval<store::AgentDb&>())) {
    std::lock_guard<std::mutex> lock(db_mutex);
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

  void Health(const httplib::Request&, httplib::Response& res) {
    Reply(res, 200,
          {{"status", "ok"},
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
    if (telemetry::FindMetric(metric) == nullptr) {
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
      if (!s.ok() || *s <= 0) return Error(res, 400, "'since' must be a look-back in seconds > 0");
      since = *s;
    }
    std::optional<double> step;
    if (req.has_param("step")) {
      auto s = ParseDurationSeconds(req.get_param_value("step"));
      if (!s.ok() || *s <= 0) return Error(res, 400, "'step' must be seconds > 0");
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
    agent::HostInfo h = host_probe.Read(options.data_dir);
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
    auto jobs_db = store::JobsDb::OpenInDataDir(options.data_dir, /*read_only=*/true);
    if (!jobs_db.ok() && jobs_db.status().code() != StatusCode::kNotFound) {
      return Error(res, 503, jobs_db.status().message());
    }
    if (jobs_db.ok()) {
      auto jobs = jobs_db->ListJobs();
      if (!jobs.ok()) return Error(res, 503, jobs.status().message());
      double now = clock.UnixSeconds();
      for (const auto& j : *jobs) list.push_back(store::JobJson(j, now));
    }
    Reply(res, 200, {{"jobs", std::move(list)}});
  }

  void Idle(const httplib::Request&, httplib::Response& res) {
    agent::IdleStatus s = live.Idle();
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
    res.set_content(RenderMetrics(live.Latest(), options.hostname, live.Counters(), live.Idle()),
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

  void Routes() {
    auto wrap = [this](void (Impl::*handler)(const httplib::Request&, httplib::Response&)) {
      return [this, handler](const httplib::Request& req, httplib::Response& res) {
        (this->*handler)(req, res);
      };
    };
    http.Get("/v1/health", wrap(&Impl::Health));
    http.Get("/v1/gpus", wrap(&Impl::Gpus));
    http.Get("/v1/series", wrap(&Impl::Series));
    http.Get("/v1/alerts", wrap(&Impl::Alerts));
    http.Get("/v1/host", wrap(&Impl::Host));
    http.Get("/v1/jobs", wrap(&Impl::Jobs));
    http.Get("/v1/idle", wrap(&Impl::Idle));
    http.Post("/v1/idle/cancel", wrap(&Impl::IdleCancel));
    http.Get("/metrics", wrap(&Impl::Metrics));
    http.Get("/", wrap(&Impl::Dashboard));
    http.Get("/index.html", wrap(&Impl::Dashboard));
    http.Get(R"(/assets/.*)", wrap(&Impl::Dashboard));
    // Anything else under /v1 (or a wrong method): a JSON 404/405 with the reason.
    http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      if (res.status == 404) {
        Error(res, 404, "no such endpoint: " + req.method + " " + req.path);
      } else if (res.status == 405) {
        Error(res, 405, "method " + req.method + " not allowed on " + req.path);
      } else {
        Error(res, res.status,
              "malformed HTTP request (a POST without a body still needs Content-Length: 0)");
      }
    });
    // The edge: a handler that throws answers 500 with the reason instead of dropping the
    // connection.
    http.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "internal error";
          try {
            std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what = std::string("internal error: ") + e.what();
          } catch (...) {
          }
          spdlog::error("HTTP handler failed: {}", what);
          Error(res, 500, what);
        });
  }
};

AgentServer::AgentServer(ServerOptions options, agent::LiveState& live, const Clock& clock)
    : impl_(std::make_unique<Impl>(std::move(options), live, clock)) {}

AgentServer::~AgentServer() { Stop(); }

Status AgentServer::Start() {
  FULCRUM_ASSIGN_OR_RETURN(auto address, ParseListen(impl_->options.listen));
  int threads = impl_->options.worker_threads;
  impl_->http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // One request per connection: with a small pool, a kept-alive connection would hold a worker
  // idle for the keep-alive timeout (5 s) while a browser's other connections (it opens up to 6
  // per host: the dashboard's parallel /v1 polls) queue behind it; the page then stalls.
  impl_->http.set_keep_alive_max_count(1);
  impl_->Routes();
  if (address.second == 0) {
    impl_->port = impl_->http.bind_to_any_port(address.first);
  } else {
    impl_->port = impl_->http.bind_to_port(address.first, address.second) ? address.second : -1;
  }
  if (impl_->port <= 0) {
    return Status::Unavailable("cannot listen on " + impl_->options.listen +
                               " (address in use or not local?)");
  }
  impl_->thread = std::thread([this] {
    try {
      impl_->http.listen_after_bind();
    } catch (const std::exception& e) {
      spdlog::error("HTTP server stopped: {}", e.what());
    }
  });
  return Status::Ok();
}

void AgentServer::Stop() {
  if (!impl_->thread.joinable()) return;
  impl_->http.stop();
  impl_->thread.join();
}

int AgentServer::port() const { return impl_->port; }

}  // namespace fulcrum::server
