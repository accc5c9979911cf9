#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/clock.h"
#include "server/http_server.h"
#include "server/metrics.h"

namespace fulcrum::server {
namespace {

TEST(ParseListenTest, AcceptsHostPortAndRejectsGarbage) {
  auto a = ParseListen("127.0.0.1:9400");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "127.0.0.1");
  EXPECT_EQ(a->second, 9400);
  EXPECT_EQ(ParseListen("[::1]:0")->first, "::1");
  EXPECT_FALSE(ParseListen("9400").ok());
  EXPECT_FALSE(ParseListen("localhost:99999").ok());
  EXPECT_FALSE(ParseListen("localhost:http").ok());
}

telemetry::GpuSnapshot Snapshot() {
  telemetry::GpuSample a;
  a.index = 0;
  a.uuid = "GPU-a";
  a.name = "Model \"X\"\\";
  a.temperature_celsius = 71;
  a.power_watts = 250.5;
  a.ecc_uncorrected = 0;
  a.clock_event_reasons = telemetry::kReasonSwPowerCap;
  telemetry::GpuSample b = a;
  b.index = 1;
  b.uuid = "GPU-b";
  b.power_watts.reset();  // unsupported on this GPU
  return {a, b};
}

TEST(MetricsTest, UnknownFieldsHaveNoSeries) {
  std::string text = RenderMetrics(Snapshot(), "host\n1", {}, {});
  EXPECT_NE(text.find("fulcrum_gpu_power_watts{gpu=\"0\""), std::string::npos);
  EXPECT_EQ(text.find("fulcrum_gpu_power_watts{gpu=\"1\""), std::string::npos);
  EXPECT_EQ(text.find("fulcrum_gpu_utilization_ratio"), std::string::npos);  // unknown everywhere
  EXPECT_NE(text.find("fulcrum_gpu_power_capped{gpu=\"1\""), std::string::npos);
  EXPECT_NE(text.find("model=\"Model \\\"X\\\"\\\\\""), std::string::npos) << text;
  EXPECT_NE(text.find("hostname=\"host\\n1\""), std::string::npos);
  EXPECT_NE(text.find("# TYPE fulcrum_gpu_ecc_uncorrected_errors_total counter"),
            std::string::npos);
}

TEST(MetricsTest, PromtoolAcceptsTheExposition) {
  namespace fs = std::filesystem;
  fs::path file =
      fs::path(FULCRUM_BUILD_DIR) / "Testing" / ("metrics-" + std::to_string(getpid()) + ".txt");
  fs::create_directories(file.parent_path());
  AgentCounters counters;
  counters.outbox_pending = 3;
  std::ofstream(file) << RenderMetrics(Snapshot(), "host", counters, {});
  std::string cmd = "promtool check metrics < '" + file.string() + "' 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[512];
  while (fgets(buf, sizeof buf, pipe) != nullptr) output += buf;
  int rc = pclose(pipe);
  EXPECT_EQ(rc, 0) << output;
  EXPECT_EQ(output, "") << output;  // no lint complaints either
  fs::remove(file);
}

}  // namespace
}  // namespace fulcrum::server

namespace fulcrum::server {
namespace {

class EmptyState final : public AgentStateView {
 public:
  telemetry::GpuSnapshot Latest() const override { return {}; }
  AgentCounters Counters() const override { return {}; }
  IdleStatus Idle() const override { return {}; }
  HostInfo Host() override { return {}; }
  void RequestIdleCancel() override {}
};

// The raw-request seam the HTTP fuzz target drives: the same parsing, guard and routes as a
// connection.
TEST(ServeRawRequestTest, AnswersAsAConnectionWould) {
  EmptyState state;
  ManualClock clock;
  ServerOptions options;
  options.data_dir = "/nonexistent-fulcrum-data";
  AgentServer server(options, state, clock);
  std::string health = server.ServeRawRequest("GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n");
  EXPECT_EQ(health.rfind("HTTP/1.1 200 ", 0), 0u) << health;
  EXPECT_NE(health.find("\"status\":\"ok\""), std::string::npos) << health;
  std::string bad = server.ServeRawRequest("GET /%ff HTTP/1.1\r\nHost: localhost\r\n\r\n");
  EXPECT_EQ(bad.rfind("HTTP/1.1 400 ", 0), 0u) << bad;
  std::string series = server.ServeRawRequest(
      "GET /v1/series?metric=gpu_power_watts&step=1e-300 HTTP/1.1\r\nHost: localhost\r\n\r\n");
  EXPECT_EQ(series.rfind("HTTP/1.1 400 ", 0), 0u) << series;
  std::string method = server.ServeRawRequest("DELETE /v1/health HTTP/1.1\r\n\r\n");
  EXPECT_EQ(method.rfind("HTTP/1.1 405 ", 0), 0u) << method;
  EXPECT_NE(method.find("Allow: GET, HEAD"), std::string::npos) << method;
}

}  // namespace
}  // namespace fulcrum::server
