#include "server/metrics.h"

#include <fmt/format.h>

namespace fulcrum::server {

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

void Family(std::string& out, const std::string& name, const char* help, const char* type) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void Value(std::string& out, double v) {
  // fmt prints the shortest text that reads back as the same double.
  fmt::format_to(std::back_inserter(out), "{}\n", v);
}

}  // namespace

std::string RenderMetrics(const telemetry::GpuSnapshot& snapshot, const std::string& hostname,
                          const AgentCounters& counters, const IdleStatus& idle) {
  std::string out;
  out.reserve(4096 + snapshot.size() * 2048);
  std::vector<std::string> labels;
  std::string host = EscapeLabelValue(hostname);
  for (const telemetry::GpuSample& s : snapshot) {
    labels.push_back(fmt::format("gpu=\"{}\",uuid=\"{}\",model=\"{}\",hostname=\"{}\"", s.index,
                                 EscapeLabelValue(s.uuid), EscapeLabelValue(s.name), host));
  }
  for (const telemetry::MetricDef& m : telemetry::Metrics()) {
    std::string name = std::string("fulcrum_") + m.name;
    bool any = false;
    for (size_t i = 0; i < snapshot.size(); ++i) {
      std::optional<double> v = m.extract(snapshot[i]);
      if (!v) continue;
      if (!any) {
        Family(out, name, m.help, m.type == telemetry::MetricType::kCounter ? "counter" : "gauge");
        any = true;
      }
      fmt::format_to(std::back_inserter(out), "{}{{{}}} ", name, labels[i]);
      Value(out, *v);
    }
  }
  auto counter = [&](const char* name, const char* help, double v) {
    Family(out, name, help, "counter");
    fmt::format_to(std::back_inserter(out), "{}{{hostname=\"{}\"}} ", name, host);
    Value(out, v);
  };
  auto gauge = [&](const char* name, const char* help, double v) {
    Family(out, name, help, "gauge");
    fmt::format_to(std::back_inserter(out), "{}{{hostname=\"{}\"}} ", name, host);
    Value(out, v);
  };
  counter("fulcrum_agent_samples_total", "Sampling ticks done", counters.samples_total);
  counter("fulcrum_agent_sample_errors_total", "Sampling ticks whose GPU source failed",
          counters.sample_errors_total);
  counter("fulcrum_agent_store_errors_total", "Failed writes to agent.db",
          counters.store_errors_total);
  counter("fulcrum_agent_alert_transitions_total", "Alert state changes",
          counters.transitions_total);
  counter("fulcrum_agent_notifications_total", "Notifications put in the outbox",
          counters.notifications_total);
  gauge("fulcrum_agent_sample_duration_seconds", "Time the last tick took to read the GPUs",
        counters.last_sample_seconds);
  if (counters.outbox_pending) {
    gauge("fulcrum_agent_outbox_pending", "Notifications waiting for delivery",
          static_cast<double>(*counters.outbox_pending));
  }
  gauge("fulcrum_agent_idle_seconds", "How long every GPU has been idle", idle.idle_seconds);
  return out;
}

}  // namespace fulcrum::server
