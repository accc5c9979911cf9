// Agent config files as the user writes them (issue 29, item 11): one holding secrets that its
// group or every user can read is refused with the chmod to run; numbers out of range and a
// second YAML document are refused at file:line, as written.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "agent/config.h"

namespace fulcrum::agent {
namespace {

namespace fs = std::filesystem;

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/config-files-" + std::to_string(::getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& text, mode_t mode) {
    const std::string path = dir_ + "/agent.yaml";
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }
  std::string dir_;
};

TEST_F(ConfigFileTest, AConfigWithSecretsOthersCanReadIsRefusedWithTheChmod) {
  for (mode_t mode : {0644, 0640, 0604}) {
    SCOPED_TRACE(mode);
    const std::string path = Write(
        "token: AGENTTOKEN\nreceivers:\n  - {url: \"https://hooks.slack.com/services/T/B/X\"}\n",
        mode);
    AgentConfig c;
    Status st = LoadAgentConfigFile(path, c);
    ASSERT_EQ(st.code(), StatusCode::kInvalidInput) << st.ToString();
    EXPECT_NE(st.message().find("run: chmod 600 " + path), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("token, receivers[0].url"), std::string::npos) << st.message();
    EXPECT_EQ(st.message().find("AGENTTOKEN"), std::string::npos) << "the secret is not shown";
  }
  AgentConfig c;
  Status st = LoadAgentConfigFile(Write("token: AGENTTOKEN\n", 0644), c);
  EXPECT_NE(st.message().find("mode 0644 (readable by every user)"), std::string::npos)
      << st.message();
  st = LoadAgentConfigFile(Write("token: AGENTTOKEN\n", 0640), c);
  EXPECT_NE(st.message().find("mode 0640 (group-readable)"), std::string::npos) << st.message();
}

TEST_F(ConfigFileTest, AnOwnerOnlyConfigOrOneWithoutSecretsIsAccepted) {
  AgentConfig c;
  EXPECT_TRUE(LoadAgentConfigFile(Write("token: AGENTTOKEN\n", 0600), c).ok());
  EXPECT_EQ(c.token, "AGENTTOKEN");
  AgentConfig plain;
  Status st = LoadAgentConfigFile(Write("source: sim\nsim-gpus: 4\n", 0644), plain);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(plain.sim_gpus, 4);
  // PagerDuty's public endpoint is no secret; its routing key is.
  EXPECT_TRUE(SecretFields(AgentConfig{}).empty());
  AgentConfig pd;
  pd.receivers.push_back({"pd", kPagerDutyEventsUrl, "pagerduty", "", "", "KEY"});
  EXPECT_EQ(SecretFields(pd), std::vector<std::string>{"receivers[0].routing_key"});
}

TEST_F(ConfigFileTest, SimGpusOutOfRangeIsReportedAsWrittenAtItsLine) {
  for (const char* value : {"1e19", "0", "65", "2.5", "-3"}) {
    SCOPED_TRACE(value);
    AgentConfig c;
    Status st =
        LoadAgentConfigFile(Write(std::string("source: sim\nsim-gpus: ") + value + "\n", 0600), c);
    ASSERT_EQ(st.code(), StatusCode::kInvalidInput);
    EXPECT_NE(st.message().find(dir_ +
                                "/agent.yaml:2: sim-gpus: expected a whole number from 1 "
                                "to 64, found \"" +
                                std::string(value) + "\""),
              std::string::npos)
        << st.message();
  }
}

TEST_F(ConfigFileTest, ASecondYamlDocumentIsRefusedAtItsLine) {
  AgentConfig c;
  Status st = LoadAgentConfigFile(Write("source: sim\n---\ntoken: x\n", 0600), c);
  ASSERT_EQ(st.code(), StatusCode::kInvalidInput);
  EXPECT_NE(st.message().find(dir_ + "/agent.yaml:3: expected one YAML document"),
            std::string::npos)
      << st.message();
}

// Errors found after parsing used to lack the line ("interval: expected 50ms to 1h").
TEST_F(ConfigFileTest, RangeAndFormatErrorsNameTheirLine) {
  for (const auto& [text, where] : std::vector<std::pair<std::string, std::string>>{
           {"source: sim\ninterval: 10ms\n",
            "agent.yaml:2: interval: expected a duration from "
            "50ms to 1h, found \"10ms\""},
           {"fast-interval: 5ms\n", "agent.yaml:1: fast-interval: expected 0 (off) or a duration"},
           {"receivers:\n  - url: \"https://x/y\"\n    format: discrod\n",
            "agent.yaml:3: receivers[0].format: expected one of"},
           {"source: sim\nreceiver-format: slack\n", "agent.yaml:2: receiver-format: expected"}}) {
    SCOPED_TRACE(text);
    AgentConfig c;
    Status st = LoadAgentConfigFile(Write(text, 0600), c);
    ASSERT_EQ(st.code(), StatusCode::kInvalidInput);
    EXPECT_NE(st.message().find(dir_ + "/" + where), std::string::npos) << st.message();
  }
}

// The checks that ran only after the file was read (ValidateAgentConfig) named no place: "source
// 'foo': expected nvml, ...", "receiver 'default': URL must start with http://", "idle.after:
// expected > 0". Each now names the line it is on (and never quotes a receiver URL: a secret).
TEST_F(ConfigFileTest, ErrorsOfCheckedValuesNameTheirLine) {
  for (const auto& [text, where] : std::vector<std::pair<std::string, std::string>>{
           {"interval: 1s\nsource: foo\n",
            "agent.yaml:2: source: expected nvml, sim or replay:FILE, found \"foo\""},
           {"source: \"replay:\"\n", "agent.yaml:1: source: expected nvml, sim or replay:FILE"},
           {"source: sim\nlisten: abc\n", "agent.yaml:2: listen: expected HOST:PORT"},
           {"source: sim\nreceiver: ftp://SECRETHOST/x\n",
            "agent.yaml:2: receiver 'default': URL must start with http:// or https://"},
           {"receivers:\n  - name: a\n    url: \"http://\"\n",
            "agent.yaml:3: receiver 'a': url is not a valid http(s) URL"},
           {"receivers:\n  - name: a\n    url: \"https://SECRETHOST/y\"\n    secret: S\n",
            "agent.yaml:4: receiver 'a': 'secret' signs feishu and dingtalk bots only"},
           {"receivers:\n  - name: pd\n    format: pagerduty\n",
            "agent.yaml:2: receiver 'pd': format pagerduty needs 'routing_key'"},
           {"receivers:\n  - url: \"https://SECRETHOST/y\"\n    routing_key: K\n",
            "agent.yaml:3: receiver 'default': 'routing_key' is for format pagerduty only"},
           {"allowed-hosts: [ok.example, \"bad host\"]\n",
            "agent.yaml:1: allowed-hosts[1]: expected a host name or IP address"},
           {"nccl-ras: \"nothost:99999\"\n", "agent.yaml:1: nccl-ras: expected off or IPV4:PORT"},
           {"nccl-ras-interval: 0s\n",
            "agent.yaml:1: nccl-ras-interval: expected a duration from 1s to 1h, found \"0s\""},
           {"idle:\n  after: 0s\n", "agent.yaml:2: idle.after: expected a duration above 0"},
           {"idle:\n  utilization_below_pct: 150\n",
            "agent.yaml:2: idle.utilization_below_pct: expected a percentage from 0 to 100"},
           {"idle:\n  memory_below_ratio: 5\n",
            "agent.yaml:2: idle.memory_below_ratio: expected a ratio from 0 to 1, found \"5\""},
           {"retention:\n  raw: 48h\n  rollups: 0s\n",
            "agent.yaml:3: retention.rollups: expected a duration above 0"}}) {
    SCOPED_TRACE(text);
    AgentConfig c;
    Status st = LoadAgentConfigFile(Write(text, 0600), c);
    ASSERT_EQ(st.code(), StatusCode::kInvalidInput);
    EXPECT_NE(st.message().find(dir_ + "/" + where), std::string::npos) << st.message();
    EXPECT_EQ(st.message().find("SECRETHOST"), std::string::npos) << st.message();
  }
}

// The same checks on values from the flags (no file) keep their words.
TEST(AgentConfigFlagsTest, ValuesFromFlagsAreCheckedToo) {
  AgentConfig c;
  c.source = "foo";
  EXPECT_EQ(ValidateAgentConfig(c).message(), "source 'foo': expected nvml, sim or replay:FILE");
  c.source = "sim";
  c.receivers.push_back({});
  c.receivers.back().url = "ftp://x";
  EXPECT_EQ(ValidateAgentConfig(c).message(),
            "receiver 'default': URL must start with http:// or https://");
  c.receivers.back().url = "https://x/y";
  EXPECT_TRUE(ValidateAgentConfig(c).ok()) << ValidateAgentConfig(c).message();
  c.allowed_hosts.push_back("a b");
  EXPECT_NE(ValidateAgentConfig(c).message().find("allowed-host 'a b': expected a host name"),
            std::string::npos);
}

}  // namespace
}  // namespace fulcrum::agent
