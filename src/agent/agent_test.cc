#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "agent/config.h"
#include "agent/idle.h"

namespace fulcrum::agent {
namespace {

TEST(AgentConfigTest, ReadsEveryFlagAndFileOnlySettings) {
  AgentConfig c;
  Status st = ParseAgentConfigYaml(R"(
source: sim
sim-gpus: 8
sim_scenario: faults.yaml
listen: 127.0.0.1:9555
data-dir: /tmp/x
rules: r.yaml
interval: 500ms
receiver: http://127.0.0.1:1/hook
receiver-format: slack
token: t0ken
record: rec.jsonl
retention: {raw: 2h, rollups: 7d}
idle: {enabled: true, dry_run: false, after: 10m, warn_before: 1m, command: [echo, bye]}
)",
                                   "agent.yaml", c);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(c.source, "sim");
  EXPECT_EQ(c.sim_gpus, 8);
  EXPECT_EQ(c.sim_scenario, "faults.yaml");
  EXPECT_EQ(c.listen, "127.0.0.1:9555");
  EXPECT_EQ(c.data_dir, "/tmp/x");
  EXPECT_EQ(c.rules, "r.yaml");
  EXPECT_DOUBLE_EQ(c.interval_seconds, 0.5);
  ASSERT_EQ(c.receivers.size(), 1u);
  EXPECT_EQ(c.receivers[0].format, "slack");
  EXPECT_EQ(c.token, "t0ken");
  EXPECT_EQ(c.record, "rec.jsonl");
  EXPECT_DOUBLE_EQ(c.raw_retention_seconds, 7200);
  EXPECT_DOUBLE_EQ(c.rollup_retention_seconds, 7 * 86400);
  EXPECT_FALSE(c.idle.dry_run);
  EXPECT_DOUBLE_EQ(c.idle.after_seconds, 600);
  EXPECT_EQ(c.idle.command, (std::vector<std::string>{"echo", "bye"}));
  EXPECT_TRUE(ValidateAgentConfig(c).ok());
}

TEST(AgentConfigTest, DuplicateKeysRefused) {
  AgentConfig c;
  Status st = ParseAgentConfigYaml("interval: 1s\nlisten: a\ninterval: 5s\n", "agent.yaml", c);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "agent.yaml:3: interval: expected each key once in a mapping, found \"interval\" "
            "again (first on line 1)");
  st = ParseAgentConfigYaml("idle:\n  after: 1h\n  after: 2h\n", "agent.yaml", c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("agent.yaml:3: idle.after: expected each key once"),
            std::string::npos)
      << st.message();
}

TEST(AgentConfigTest, NonFiniteNumbersRefused) {
  for (const char* bad : {".inf", ".nan", "nan", "1e400", "-.inf"}) {
    AgentConfig c;
    Status st = ParseAgentConfigYaml(std::string("idle:\n  utilization_below_pct: ") + bad + "\n",
                                     "agent.yaml", c);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.message(), std::string("agent.yaml:2: idle.utilization_below_pct: expected a "
                                        "percentage from 0 to 100, found \"") +
                                bad + "\"");
    st = ParseAgentConfigYaml(std::string("interval: ") + bad + "\n", "agent.yaml", c);
    ASSERT_FALSE(st.ok()) << bad;
    st = ParseAgentConfigYaml(std::string("sim_gpus: ") + bad + "\n", "agent.yaml", c);
    ASSERT_FALSE(st.ok()) << bad;
  }
}

TEST(AgentConfigTest, ErrorsNameFileLineAndField) {
  AgentConfig c;
  Status st = ParseAgentConfigYaml("source: sim\ninterval: soon\n", "agent.yaml", c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("agent.yaml:2"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("agent.yaml:2: interval: expected a duration"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("found \"soon\""), std::string::npos) << st.message();
  st = ParseAgentConfigYaml("sourse: sim\n", "agent.yaml", c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("agent.yaml:1: sourse: expected a known field (source, "),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("did you mean source?"), std::string::npos) << st.message();
  st = ParseAgentConfigYaml("idle:\n  after: 1h\n  aftre: 2h\n", "agent.yaml", c);
  EXPECT_NE(st.message().find("agent.yaml:3: idle.aftre: expected a known field"),
            std::string::npos)
      << st.message();
  AgentConfig bad;
  bad.source = "gpu";
  EXPECT_EQ(ValidateAgentConfig(bad).code(), StatusCode::kInvalidInput);
  bad = AgentConfig{};
  bad.receivers.push_back({"default", "http://x", "matrix", ""});
  EXPECT_FALSE(ValidateAgentConfig(bad).ok());
}

telemetry::GpuSnapshot Gpus(double util_pct, double mem_ratio) {
  telemetry::GpuSample s;
  s.utilization_gpu_pct = util_pct;
  s.memory_total_bytes = 100;
  s.memory_used_bytes = 100 * mem_ratio;
  return {s, s};
}

IdleConfig Config() {
  IdleConfig c;
  c.after_seconds = 100;
  c.warn_before_seconds = 20;
  return c;
}

TEST(IdleDetectorTest, WarnsThenReleasesOncePerIdlePeriod) {
  IdleDetector d(Config());
  EXPECT_EQ(d.Update(Gpus(1, 0.01), false, 0), IdleAction::kNone);
  EXPECT_TRUE(d.Status(0).idle);
  EXPECT_EQ(d.Update(Gpus(1, 0.01), false, 79), IdleAction::kNone);
  EXPECT_EQ(d.Update(Gpus(1, 0.01), false, 80), IdleAction::kWarn);
  EXPECT_DOUBLE_EQ(*d.Status(80).release_in_seconds, 20);
  EXPECT_EQ(d.Update(Gpus(1, 0.01), false, 90), IdleAction::kNone);
  EXPECT_EQ(d.Update(Gpus(1, 0.01), false, 100), IdleAction::kRelease);
  EXPECT_EQ(d.Update(Gpus(1, 0.01), false, 200), IdleAction::kNone);
  EXPECT_EQ(d.Update(Gpus(50, 0.01), false, 201), IdleAction::kBusyAgain);
  EXPECT_FALSE(d.Status(201).idle);
}

TEST(IdleDetectorTest, BusyGpuMemoryOrJobOrUnknownIsNotIdle) {
  IdleDetector d(Config());
  EXPECT_EQ(d.Update(Gpus(1, 0.5), false, 0), IdleAction::kNone);  // memory held
  EXPECT_FALSE(d.Status(0).idle);
  d.Update(Gpus(1, 0.01), true, 1);  // a supervised job runs
  EXPECT_FALSE(d.Status(1).idle);
  telemetry::GpuSnapshot unknown(1);  // nothing known: never release on ignorance
  d.Update(unknown, false, 2);
  EXPECT_FALSE(d.Status(2).idle);
  d.Update({}, false, 3);  // no GPU at all
  EXPECT_FALSE(d.Status(3).idle);
}

TEST(IdleDetectorTest, CancelPostponesAndDisabledNeverActs) {
  IdleDetector d(Config());
  d.Update(Gpus(0, 0), false, 0);
  EXPECT_EQ(d.Update(Gpus(0, 0), false, 85), IdleAction::kWarn);
  EXPECT_EQ(d.Cancel(86), IdleAction::kBusyAgain);
  EXPECT_EQ(d.Update(Gpus(0, 0), false, 100), IdleAction::kNone);  // restarted at 86
  EXPECT_EQ(d.Update(Gpus(0, 0), false, 186), IdleAction::kRelease);
  IdleConfig off = Config();
  off.enabled = false;
  IdleDetector never(off);
  EXPECT_EQ(never.Update(Gpus(0, 0), false, 1000), IdleAction::kNone);
}

TEST(ReleaseRunnerTest, RunsArgvWithoutShellAndDryRunDoesNot) {
  namespace fs = std::filesystem;
  fs::path dir =
      fs::path(FULCRUM_BUILD_DIR) / "Testing" / "tmp" / ("release-" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::path marker = dir / "released; rm -rf nothing";  // a shell would split this
  ReleaseRunner runner;
  ASSERT_TRUE(runner.Run({"touch", marker.string()}, /*dry_run=*/true).ok());
  EXPECT_FALSE(fs::exists(marker));
  ASSERT_TRUE(runner.Run({"touch", marker.string()}, /*dry_run=*/false).ok());
  for (int i = 0; i < 200 && !fs::exists(marker); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(fs::exists(marker));
  runner.Poll();
  EXPECT_FALSE(runner.Run({"/nonexistent/release-cmd"}, false).ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fulcrum::agent

namespace fulcrum::agent {
namespace {

TEST(AgentConfigTest, ShippedExampleIsValid) {
  AgentConfig c;
  // Installed owner-only, as a config with a webhook URL must be (config_files_test.cc).
  const std::string copy = ::testing::TempDir() + "/shipped-agent.yaml";
  std::filesystem::copy_file(std::string(FULCRUM_SOURCE_DIR) + "/examples/agent.yaml", copy,
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::permissions(
      copy, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  Status st = LoadAgentConfigFile(copy, c);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(ValidateAgentConfig(c).ok());
  EXPECT_TRUE(c.idle.dry_run);
  EXPECT_EQ(c.receivers.size(), 1u);
}

}  // namespace
}  // namespace fulcrum::agent
