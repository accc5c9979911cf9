// GCC 12 reports a false -Wmaybe-uninitialized inside std::regex's std::function under
// -fsanitize (the asan preset); it must be silenced before any header is read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// End-to-end tests of issue 15's telemetry with real peers on loopback: `fulcrum agent` (sim
// source) under dcgm-exporter's names scraped by a real Prometheus that answers NVIDIA's own
// dashboard queries; the fleet dashboard and rules (packaging/) against a Prometheus scraping two
// agents, promtool, and Grafana's dashboard schema; the hang rule end to end to a webhook; XIDs
// counted and stored; `fulcrum query` with the names of the previous release.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "core/mutex.h"
#include "core/text_file.h"
#include "store/agent_db.h"
#include "store/jobs.h"
#include "support/agent_process.h"
#include "support/fake_http_server.h"
#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string ReadFile(const std::string& path) {
  auto text = ReadTextFile(path, "test input");
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : std::string();
}

void WriteFile(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// A webhook receiver on loopback that keeps every body posted to /hook.
class Webhook {
 public:
  Webhook() {
    server_.server().Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      MutexLock lock(mu_);
      bodies_.push_back(req.body);
      res.status = 200;
    });
    server_.Start();
  }
  std::string url() const { return server_.url() + "/hook"; }
  // The bodies that mention `text`.
  std::vector<std::string> With(const std::string& text) {
    MutexLock lock(mu_);
    std::vector<std::string> out;
    for (const std::string& b : bodies_) {
      if (b.find(text) != std::string::npos) out.push_back(b);
    }
    return out;
  }

 private:
  FakeHttpServer server_;
  Mutex mu_;
  std::vector<std::string> bodies_ GUARDED_BY(mu_);
};

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Grafana's substitution of a dashboard variable: `$name` (or `${name}`) by its value; "All" is
// the variable's allValue, ".*" for these dashboards.
std::string Substitute(std::string expr, const std::map<std::string, std::string>& values) {
  for (const auto& [name, value] : values) {
    for (const std::string& token : {"${" + name + "}", "$" + name}) {
      for (size_t at; (at = expr.find(token)) != std::string::npos;) {
        expr.replace(at, token.size(), value);
      }
    }
  }
  return expr;
}

class TelemetryE2E : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("telemetry-e2e"); }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string Scenario(const std::string& name, const std::string& yaml) {
    std::string path = dir_ + "/" + name + ".yaml";
    WriteFile(path, yaml);
    return path;
  }
  std::string dir_;
};

// NVIDIA's dashboard (every panel query and both variable queries, tests/fixtures/dcgm) shows
// data when Prometheus scrapes a fulcrum agent started with --metrics-names dcgm.
TEST_F(TelemetryE2E, DcgmDashboardQueriesReturnDataFromARealPrometheus) {
  fs::create_directories(dir_ + "/agent");
  AgentPeer agent(dir_ + "/agent", {"--source", "sim", "--sim-gpus", "2", "--metrics-names", "dcgm",
                                    "--sim-scenario", Scenario("none", "[]\n")});
  ASSERT_GT(agent.port(), 0) << agent.err();
  std::string metrics = agent.Get("/metrics");
  EXPECT_NE(metrics.find("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\""), std::string::npos);
  EXPECT_EQ(metrics.find("fulcrum_gpu_"), std::string::npos);  // dcgm names only
  std::string instance = "127.0.0.1:" + std::to_string(agent.port());
  PrometheusPeer prom(dir_ + "/prometheus", {instance});
  ASSERT_TRUE(prom.WaitForSeries("DCGM_FI_DEV_GPU_TEMP", 2, 45).size() == 2) << prom.log();

  json fixture = json::parse(ReadFile(SourcePath("tests/fixtures/dcgm/dashboard_queries.json")));
  ASSERT_GE(fixture["panels"].size(), 6u);
  // Variables: label_values(METRIC, LABEL) is Grafana's /api/v1/label/LABEL/values?match[]=.
  std::map<std::string, std::vector<std::string>> variable_values;
  std::regex label_values(R"(label_values\((\w+),\s*(\w+)\))");
  for (const json& v : fixture["variables"]) {
    std::string query = v["query"];
    std::smatch m;
    ASSERT_TRUE(std::regex_match(query, m, label_values)) << query;
    json answer = prom.Api("label/" + m[2].str() + "/values?" + UrlEncode("match[]") + "=" +
                           UrlEncode(m[1].str()));
    ASSERT_TRUE(answer.is_object()) << query;
    variable_values[v["name"]] = answer["data"].get<std::vector<std::string>>();
  }
  EXPECT_EQ(variable_values["instance"], std::vector<std::string>{instance});
  EXPECT_EQ(variable_values["gpu"], (std::vector<std::string>{"0", "1"}));

  for (const json& panel : fixture["panels"]) {
    std::string all = Substitute(panel["expr"], {{"instance", ".*"}, {"gpu", ".*"}});
    json result = prom.WaitForSeries(all, 1, 10);
    ASSERT_TRUE(result.is_array() && !result.empty()) << panel["panel"] << ": " << all;
    // One instance, one GPU selected: only that GPU's series (aggregations: one series).
    std::string one = Substitute(panel["expr"], {{"instance", instance}, {"gpu", "1"}});
    json picked = prom.Query(one);
    ASSERT_EQ(picked.size(), 1u) << panel["panel"] << ": " << one;
    if (picked[0]["metric"].contains("gpu")) {
      EXPECT_EQ(picked[0]["metric"]["gpu"], "1");
    }
    double value = std::stod(picked[0]["value"][1].get<std::string>());
    EXPECT_GT(value, 0) << panel["panel"];
  }
  // Units as dcgm-exporter's: MHz clocks, MiB framebuffer, percent utilization.
  json clock = prom.Query("DCGM_FI_DEV_SM_CLOCK{gpu=\"0\"}");
  EXPECT_EQ(clock[0]["value"][1], "1980");
  json fb = prom.Query("DCGM_FI_DEV_FB_USED{gpu=\"0\"}");
  EXPECT_EQ(fb[0]["value"][1], "63488");  // the sim's 62 GiB
  json labels = clock[0]["metric"];
  for (const char* label : {"UUID", "modelName", "Hostname", "device", "pci_bus_id"}) {
    EXPECT_FALSE(labels.value(label, "").empty()) << label << " " << labels;
  }
  EXPECT_EQ(labels["device"], "nvidia0");
}

// --metrics-names both: the two name sets carry the same reading.
TEST_F(TelemetryE2E, BothNameSetsOnOneScrapeAgree) {
  fs::create_directories(dir_ + "/agent");
  AgentPeer agent(dir_ + "/agent", {"--source", "sim", "--sim-gpus", "1", "--metrics-names", "both",
                                    "--interval", "1h"});
  ASSERT_GT(agent.port(), 0) << agent.err();
  std::string metrics;
  ASSERT_TRUE(PollUntil(
      [&] {
        return (metrics = agent.Get("/metrics")).find("DCGM_FI_DEV_POWER_USAGE") !=
               std::string::npos;
      },
      10));
  std::smatch a, b;
  ASSERT_TRUE(
      std::regex_search(metrics, a, std::regex(R"(\nfulcrum_gpu_power_watts\{[^}]*\} (\S+))")));
  ASSERT_TRUE(
      std::regex_search(metrics, b, std::regex(R"(\nDCGM_FI_DEV_POWER_USAGE\{[^}]*\} (\S+))")));
  EXPECT_EQ(a[1], b[1]);
  RunOptions in;
  in.stdin_text = metrics;
  RunOutput check = RunProgram("promtool", {"check", "metrics"}, in);
  EXPECT_EQ(check.out.find("error"), std::string::npos) << check.out << check.err;
}

// Each XID is an event: counted by code on /metrics and stored in agent.db.
TEST_F(TelemetryE2E, XidIsCountedOnMetricsAndStoredAsAnEvent) {
  fs::create_directories(dir_ + "/agent");
  double before = UnixNow();
  {
    AgentPeer agent(dir_ + "/agent", {"--source", "sim", "--sim-gpus", "2", "--sim-scenario",
                                      Scenario("xid",
                                               "- {at: 0s, gpu: 1, fault: \"xid:13\"}\n"
                                               "- {at: 1s, gpu: 1, fault: \"xid:13\"}\n")});
    ASSERT_GT(agent.port(), 0) << agent.err();
    std::string want = "xid=\"13\"} 2\n";
    std::string metrics;
    ASSERT_TRUE(PollUntil(
        [&] { return (metrics = agent.Get("/metrics")).find(want) != std::string::npos; }, 10))
        << metrics;
    EXPECT_NE(metrics.find("fulcrum_gpu_xid_errors_total{gpu=\"1\""), std::string::npos);
    EXPECT_EQ(metrics.find("fulcrum_gpu_xid_errors_total{gpu=\"0\""), std::string::npos);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // one flush
  }
  auto db = store::AgentDb::OpenInDataDir(dir_ + "/agent", /*read_only=*/true);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto events = db->ListXidEvents(before - 1);
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  ASSERT_EQ(events->size(), 2u);
  for (const store::XidEvent& e : *events) {
    EXPECT_EQ(e.gpu, 1);
    EXPECT_EQ(e.xid, 13);
  }
  EXPECT_LT((*events)[0].at, (*events)[1].at);
}

// The built-in GpuJobHung rule end to end: sim `hang` on GPU 0 while jobs.db says its job has
// shown no progress for an hour; the webhook gets the alert for GPU 0 and not GPU 1.
TEST_F(TelemetryE2E, HangScenarioFiresGpuJobHungAtTheWebhook) {
  Webhook receiver;
  std::string data = dir_ + "/agent";
  auto jobs = store::JobsDb::OpenInDataDir(data);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  store::JobRecord job;
  job.id = job.name = "llama-pretrain";
  job.state = store::JobState::kRunning;
  job.queue = "run";
  job.argv = {"torchrun", "train.py"};
  job.gpus = {0, 1};
  job.started_at = UnixNow() - 7200;
  job.heartbeat_at = UnixNow() - 3600;  // last progress step an hour ago
  job.supervisor_pid = getpid();
  ASSERT_TRUE(jobs->UpsertJob(job).ok());
  // The shipped rules with the rule's time shortened (its threshold is the configurable time).
  std::string rules = ReadFile(SourcePath("examples/rules.yaml"));
  size_t at = rules.find("- name: GpuJobHung");
  ASSERT_NE(at, std::string::npos);
  std::string hang = rules.substr(at);
  hang = std::regex_replace(hang, std::regex("threshold: 600"), "threshold: 30");
  hang = std::regex_replace(hang, std::regex("for: 1m"), "for: 1s");
  WriteFile(dir_ + "/rules.yaml", rules.substr(0, at) + hang);
  AgentPeer agent(data, {"--source", "sim", "--sim-gpus", "2", "--rules", dir_ + "/rules.yaml",
                         "--receiver", receiver.url(), "--sim-scenario",
                         Scenario("hang", "- {at: 0s, gpu: 0, fault: hang}\n")});
  ASSERT_GT(agent.port(), 0) << agent.err();
  ASSERT_TRUE(PollUntil([&] { return !receiver.With("GpuJobHung").empty(); }, 20)) << agent.err();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // GPU 1 would have fired by now
  std::vector<std::string> hung = receiver.With("GpuJobHung");
  ASSERT_EQ(hung.size(), 1u);
  std::string text = json::parse(hung[0], nullptr, false).dump();
  EXPECT_NE(text.find("\"gpu\":0"), std::string::npos) << text;
  EXPECT_NE(text.find("firing"), std::string::npos) << text;
  json alerts = json::parse(agent.Get("/v1/alerts"));
  int hung_gpus = 0;
  for (const json& a : alerts["alerts"]) {
    if (a["name"] == "GpuJobHung") {
      ++hung_gpus;
      EXPECT_EQ(a["gpu"], 0);
      EXPECT_GT(a["value"].get<double>(), 3000);  // seconds since the last progress
    }
  }
  EXPECT_EQ(hung_gpus, 1);
}

// `fulcrum query` with the names of the previous release (README changelog).
TEST_F(TelemetryE2E, QueryAcceptsTheOldNames) {
  std::string data = dir_ + "/agent";
  fs::create_directories(data);
  {
    AgentPeer agent(data, {"--source", "sim", "--sim-gpus", "1", "--interval", "200ms"});
    ASSERT_GT(agent.port(), 0) << agent.err();
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    json series = json::parse(agent.Get("/v1/series?metric=gpu_sm_clock_hz&since=60"), nullptr,
                              false);  // /v1/series too
    ASSERT_TRUE(series.is_object()) << agent.err();
    ASSERT_EQ(series["series"].size(), 1u) << series;
    EXPECT_EQ(series["series"][0]["points"][0][1], 1.98e9);
  }
  RunOutput hz = RunFulcrum({"query", "--metric", "gpu_sm_clock_hz", "--data-dir", data, "--json"});
  ASSERT_EQ(hz.exit_code, 0) << hz.err;
  json points = json::parse(hz.out)["query"]["series"][0]["points"];
  ASSERT_GE(points.size(), 3u) << hz.out;
  EXPECT_EQ(points[0][1], 1.98e9);
  RunOutput rate = RunFulcrum(
      {"query", "--metric", "gpu_pcie_tx_bytes_per_second", "--data-dir", data, "--json"});
  ASSERT_EQ(rate.exit_code, 0) << rate.err;
  json rates = json::parse(rate.out)["query"]["series"][0]["points"];
  ASSERT_GE(rates.size(), 2u) << rate.out;
  for (const json& p : rates) EXPECT_NEAR(p[1].get<double>(), 2.0e9, 1e6);  // the sim's rate
  RunOutput bad = RunFulcrum({"query", "--metric", "gpu_sm_clock_hzz", "--data-dir", data});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

// Fast ticks alert between full samples: with full samples once an hour, only the 100 ms
// ticks can see the overheat and the XID, and each reaches the webhook; the store keeps 1 s
// aggregates only (here: the one full sample).
TEST_F(TelemetryE2E, FastTicksAlertBetweenFullSamples) {
  Webhook receiver;
  WriteFile(dir_ + "/rules.yaml",
            "rules:\n"
            "  - {name: HotNow, metric: gpu_temperature_celsius, op: \">\", threshold: 90,"
            " for: 0s, severity: critical}\n"
            "  - {name: XidNow, metric: gpu_xid_last, op: in, values: [79], for: 0s,"
            " severity: critical}\n");
  std::string data = dir_ + "/agent";
  fs::create_directories(data);
  AgentPeer agent(
      data, {"--source", "sim", "--sim-gpus", "2", "--interval", "1h", "--fast-interval", "100ms",
             "--rules", dir_ + "/rules.yaml", "--receiver", receiver.url(), "--sim-scenario",
             Scenario("fast",
                      "- {at: 1s, gpu: 0, fault: overheat}\n"
                      "- {at: 1s, gpu: 1, fault: \"xid:79\"}\n")});
  ASSERT_GT(agent.port(), 0) << agent.err();
  ASSERT_TRUE(PollUntil(
      [&] { return !receiver.With("HotNow").empty() && !receiver.With("XidNow").empty(); }, 15))
      << agent.err();
  json gpus = json::parse(agent.Get("/v1/gpus"));
  EXPECT_EQ(gpus["gpus"][0]["temperature_celsius"], 95);  // the live view follows the fast ticks
  auto db = store::AgentDb::OpenInDataDir(data, /*read_only=*/true);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(*db->CountSamples(), 2);  // one full sample of two GPUs: fast ticks are not rows
}

// --- the fleet: packaging/prometheus/fulcrum-rules.yml and packaging/grafana/fulcrum-fleet.json

TEST_F(TelemetryE2E, PromtoolChecksTheFleetRules) {
  RunOutput check = RunProgram(
      "promtool", {"check", "rules", SourcePath("packaging/prometheus/fulcrum-rules.yml")});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("SUCCESS"), std::string::npos) << check.out;
}

// Grafana's classic dashboard schema (github.com/grafana/grafana@00139e84396be1600192135b87b860
// 7f3f7b79d0, kinds/dashboard/dashboard_kind.cue): the fields and constraints it states, and the
// Prometheus query model every target uses (expr, refId).
TEST_F(TelemetryE2E, FleetDashboardFollowsGrafanasDashboardSchema) {
  json d = json::parse(ReadFile(SourcePath("packaging/grafana/fulcrum-fleet.json")));
  ASSERT_TRUE(d.is_object());
  const std::set<std::string> known = {"id",           "uid",
                                       "title",        "description",
                                       "revision",     "gnetId",
                                       "tags",         "style",
                                       "timezone",     "editable",
                                       "graphTooltip", "time",
                                       "timepicker",   "fiscalYearStartMonth",
                                       "liveNow",      "weekStart",
                                       "refresh",      "schemaVersion",
                                       "version",      "panels",
                                       "templating",   "annotations",
                                       "links",        "snapshot"};
  for (const auto& [key, value] : d.items()) EXPECT_EQ(known.count(key), 1u) << key;
  std::string uid = d["uid"];
  EXPECT_TRUE(uid.size() >= 8 && uid.size() <= 40) << uid;  // "string (8-40)"
  EXPECT_TRUE(d["style"] == "dark" || d["style"] == "light");
  EXPECT_TRUE(d["editable"].is_boolean());
  EXPECT_TRUE(d["graphTooltip"] == 0 || d["graphTooltip"] == 1 || d["graphTooltip"] == 2);
  EXPECT_TRUE(d["time"]["from"].is_string() && d["time"]["to"].is_string());
  EXPECT_TRUE(d["schemaVersion"].is_number_unsigned() && d["schemaVersion"] <= 65535);
  const std::set<std::string> variable_types = {"query",    "adhoc",   "constant", "datasource",
                                                "interval", "textbox", "custom",   "system"};
  for (const json& v : d["templating"]["list"]) {
    EXPECT_EQ(variable_types.count(v["type"]), 1u) << v;
    EXPECT_TRUE(v["name"].is_string()) << v;
    EXPECT_TRUE(v["hide"] == 0 || v["hide"] == 1 || v["hide"] == 2) << v;
  }
  std::set<uint64_t> ids;
  std::vector<std::vector<bool>> grid;
  for (const json& p : d["panels"]) {
    std::string title = p.value("title", "");
    EXPECT_FALSE(p["type"].get<std::string>().empty()) << title;
    ASSERT_TRUE(p["id"].is_number_unsigned()) << title;
    EXPECT_TRUE(ids.insert(p["id"].get<uint64_t>()).second) << "duplicate id " << title;
    const json& g = p["gridPos"];
    int h = g["h"], w = g["w"], x = g["x"], y = g["y"];
    EXPECT_TRUE(h > 0 && w > 0 && w <= 24 && x >= 0 && x < 24 && y >= 0) << title;
    EXPECT_LE(x + w, 24) << title;
    if (static_cast<int>(grid.size()) < y + h) grid.resize(y + h, std::vector<bool>(24, false));
    for (int r = y; r < y + h; ++r) {
      for (int c = x; c < std::min(24, x + w); ++c) {
        EXPECT_FALSE(grid[r][c]) << title << " overlaps another panel";
        grid[r][c] = true;
      }
    }
    EXPECT_TRUE(p["options"].is_object()) << title;
    EXPECT_TRUE(p["fieldConfig"]["defaults"].is_object()) << title;
    EXPECT_TRUE(p["fieldConfig"]["overrides"].is_array()) << title;
    EXPECT_TRUE(p["transformations"].is_array()) << title;
    ASSERT_FALSE(p["targets"].empty()) << title;
    for (const json& t : p["targets"]) {
      EXPECT_FALSE(t.value("expr", "").empty()) << title;
      EXPECT_FALSE(t.value("refId", "").empty()) << title;
    }
  }
}

// Every query of the fleet dashboard returns data from a real Prometheus scraping two agents
// with the fleet rules loaded; choosing one node narrows every panel to it.
TEST_F(TelemetryE2E, FleetDashboardQueriesReturnDataFromPrometheusScrapingTwoAgents) {
  std::vector<std::unique_ptr<AgentPeer>> agents;
  std::vector<std::string> targets;
  struct Node {
    const char* name;
    const char* scenario;
  };
  // node-a: an XID 48 (critical, so an alert fires) and an idle GPU; node-b healthy.
  for (const Node& n : {Node{"node-a",
                             "- {at: 3s, gpu: 1, fault: \"xid:48\"}\n"
                             "- {at: 0s, gpu: 0, fault: process-exit}\n"},
                        Node{"node-b", "[]\n"}}) {
    std::string data = dir_ + "/" + n.name;
    fs::create_directories(data);
    WriteFile(data + "/agent.yaml", std::string("hostname: ") + n.name + "\n");
    agents.push_back(std::make_unique<AgentPeer>(
        data, std::vector<std::string>{"--source", "sim", "--sim-gpus", "2", "--config",
                                       data + "/agent.yaml", "--sim-scenario",
                                       Scenario(n.name, n.scenario)}));
    ASSERT_GT(agents.back()->port(), 0) << agents.back()->err();
    targets.push_back("127.0.0.1:" + std::to_string(agents.back()->port()));
  }
  PrometheusPeer prom(dir_ + "/prometheus", targets,
                      {SourcePath("packaging/prometheus/fulcrum-rules.yml")});
  ASSERT_EQ(prom.WaitForSeries("fulcrum_gpu_info", 4, 45).size(), 4u) << prom.log();
  json d = json::parse(ReadFile(SourcePath("packaging/grafana/fulcrum-fleet.json")));
  // The node variable lists both nodes.
  json nodes = prom.Api("label/hostname/values?" + UrlEncode("match[]") + "=fulcrum_gpu_info");
  EXPECT_EQ(nodes["data"], json::array({"node-a", "node-b"}));
  for (const json& p : d["panels"]) {
    for (const json& t : p["targets"]) {
      std::string all = Substitute(t["expr"], {{"hostname", ".*"}});
      // rate() over 1m needs two scrapes; the alert needs a rule evaluation after the XID.
      json result = prom.WaitForSeries(all, 1, 30);
      ASSERT_TRUE(result.is_array() && !result.empty()) << p["title"] << ": " << all;
      json one = prom.Query(Substitute(t["expr"], {{"hostname", "node-b"}}));
      ASSERT_TRUE(one.is_array()) << all;
      for (const json& series : one) {
        if (series["metric"].contains("hostname")) {
          EXPECT_EQ(series["metric"]["hostname"], "node-b") << p["title"];
        }
      }
    }
  }
  json firing = prom.Query("ALERTS{alertstate=\"firing\"}");
  ASSERT_FALSE(firing.empty());
  EXPECT_EQ(firing[0]["metric"]["alertname"], "FulcrumGpuCriticalXid");
  EXPECT_EQ(firing[0]["metric"]["hostname"], "node-a");
  EXPECT_EQ(firing[0]["metric"]["xid"], "48");
  json idle = prom.Query("hostname:fulcrum_gpu_idle:count");
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_EQ(idle[0]["metric"]["hostname"], "node-a");
}

}  // namespace
}  // namespace fulcrum::testing
