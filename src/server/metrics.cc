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

Result<MetricsNames> ParseMetricsNames(std::string_view text) {
  if (text == "fulcrum") return MetricsNames::kFulcrum;
  if (text == "dcgm") return MetricsNames::kDcgm;
  if (text == "both") return MetricsNames::kBoth;
  return Status::InvalidInput("--metrics-names '" + std::string(text) +
                              "': expected fulcrum, dcgm or both");
}

namespace {

const char* TypeName(telemetry::MetricType type) {
  return type == telemetry::MetricType::kCounter ? "counter" : "gauge";
}

// One family: `name{labels[i]} value` for every GPU whose value is known; nothing when none is.
template <typename Extract>
void Samples(std::string& out, const std::string& name, const char* help, const char* type,
             const telemetry::GpuSnapshot& snapshot, const std::vector<std::string>& labels,
             Extract extract) {
  bool any = false;
  for (size_t i = 0; i < snapshot.size(); ++i) {
    std::optional<double> v = extract(snapshot[i]);
    if (!v) continue;
    if (!any) {
      Family(out, name, help, type);
      any = true;
    }
    fmt::format_to(std::back_inserter(out), "{}{{{}}} ", name, labels[i]);
    Value(out, *v);
  }
}

void RenderFulcrum(std::string& out, const telemetry::GpuSnapshot& snapshot,
                   const std::string& host) {
  std::vector<std::string> labels;
  for (const telemetry::GpuSample& s : snapshot) {
    labels.push_back(fmt::format("gpu=\"{}\",uuid=\"{}\",model=\"{}\",hostname=\"{}\"", s.index,
                                 EscapeLabelValue(s.uuid), EscapeLabelValue(s.name), host));
  }
  for (const telemetry::MetricDef& m : telemetry::Metrics()) {
    Samples(out, std::string("fulcrum_") + m.name, m.help, TypeName(m.type), snapshot, labels,
            m.extract);
  }
  // Every XID is counted under its code; a GPU that can report XIDs but had none has no series
  // (the code is unknown until one arrives), as Prometheus counters with labels do.
  bool any = false;
  for (size_t i = 0; i < snapshot.size(); ++i) {
    for (const auto& [code, n] : snapshot[i].xid_counts) {
      if (!any) {
        Family(out, "fulcrum_gpu_xid_errors_total", "XID errors since the agent started, by code",
               "counter");
        any = true;
      }
      fmt::format_to(std::back_inserter(out), "fulcrum_gpu_xid_errors_total{{{},xid=\"{}\"}} ",
                     labels[i], code);
      Value(out, n);
    }
  }
  // The static facts of each GPU as labels of a constant 1 (the Prometheus `_info` pattern).
  if (!snapshot.empty()) {
    Family(out, "fulcrum_gpu_info", "GPU identity: PCI bus id, device minor, driver version",
           "gauge");
  }
  for (size_t i = 0; i < snapshot.size(); ++i) {
    const telemetry::GpuSample& s = snapshot[i];
    fmt::format_to(
        std::back_inserter(out),
        "fulcrum_gpu_info{{{},pci_bus_id=\"{}\",device=\"{}\",driver_version=\"{}\"}} 1\n",
        labels[i], EscapeLabelValue(s.pci_bus_id),
        s.minor ? "nvidia" + std::to_string(*s.minor) : std::string(),
        EscapeLabelValue(s.driver_version));
  }
}

// dcgm-exporter's labels: gpu, UUID, pci_bus_id, device ("nvidia<minor>"), modelName and
// Hostname, then DCGM_FI_DRIVER_VERSION (a "label" counter of its default-counters.csv). Label
// set and order of its render_metrics.go at github.com/NVIDIA/dcgm-exporter@13ad457 (4.4.1-4.6.0;
// later commits spell the last one `hostname`).
void RenderDcgm(std::string& out, const telemetry::GpuSnapshot& snapshot, const std::string& host) {
  std::vector<std::string> labels;
  for (const telemetry::GpuSample& s : snapshot) {
    std::string l = fmt::format(
        "gpu=\"{}\",UUID=\"{}\",pci_bus_id=\"{}\",device=\"{}\",modelName=\"{}\",Hostname=\"{}\"",
        s.index, EscapeLabelValue(s.uuid), EscapeLabelValue(s.pci_bus_id),
        s.minor ? "nvidia" + std::to_string(*s.minor) : std::string(), EscapeLabelValue(s.name),
        host);
    if (!s.driver_version.empty()) {
      l += ",DCGM_FI_DRIVER_VERSION=\"" + EscapeLabelValue(s.driver_version) + "\"";
    }
    labels.push_back(std::move(l));
  }
  for (const telemetry::DcgmMetricDef& m : telemetry::DcgmMetrics()) {
    Samples(out, m.name, m.help, TypeName(m.type), snapshot, labels, m.extract);
  }
}

}  // namespace

std::string RenderMetrics(const telemetry::GpuSnapshot& snapshot, const std::string& hostname,
                          const AgentCounters& counters, const IdleStatus& idle,
                          MetricsNames names) {
  std::string out;
  out.reserve(4096 + snapshot.size() * 4096);
  std::string host = EscapeLabelValue(hostname);
  if (names != MetricsNames::kDcgm) RenderFulcrum(out, snapshot, host);
  if (names != MetricsNames::kFulcrum) RenderDcgm(out, snapshot, host);
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
