// The receiver part of the agent config: per-receiver signing secret and PagerDuty routing key,
// checked at start-up (a key the format would ignore is refused, not silently dropped).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/config.h"

namespace fulcrum::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Result<AgentConfig> Load(const std::string& yaml) {
  AgentConfig config;
  FULCRUM_RETURN_IF_ERROR(ParseAgentConfigYaml(yaml, "agent.yaml", config));
  FULCRUM_RETURN_IF_ERROR(ValidateAgentConfig(config));
  return config;
}

TEST(AgentConfigReceiversTest, SecretsAndRoutingKeyAreRead) {
  auto config = Load(R"(receivers:
  - {name: lark, url: "https://open.feishu.cn/open-apis/bot/v2/hook/T", format: feishu,
     secret: FEISHUSECRET}
  - {name: ding, url: "https://oapi.dingtalk.com/robot/send?access_token=T", format: dingtalk,
     secret: SECDING}
  - {name: pd, format: pagerduty, routing_key: R0UTING}
  - {name: am, url: "http://127.0.0.1:9093", format: alertmanager-api}
  - {name: teams, url: "https://example.webhook.office.com/webhookb2/x", format: teams}
  - {name: discord, url: "https://discord.com/api/webhooks/1/t", format: discord}
)");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_EQ(config->receivers.size(), 6u);
  EXPECT_EQ(config->receivers[0].secret, "FEISHUSECRET");
  EXPECT_EQ(config->receivers[1].secret, "SECDING");
  EXPECT_EQ(config->receivers[2].routing_key, "R0UTING");
  // PagerDuty's Events API v2 endpoint when no url is given.
  EXPECT_EQ(config->receivers[2].url, "https://events.pagerduty.com/v2/enqueue");
}

TEST(AgentConfigReceiversTest, KeysTheFormatWouldIgnoreAreRefused) {
  auto slack_secret = Load(
      "receivers:\n  - {url: \"https://hooks.slack.com/x\", format: slack, "
      "secret: S}\n");
  ASSERT_FALSE(slack_secret.ok());
  EXPECT_THAT(slack_secret.status().message(), HasSubstr("'secret' signs feishu and dingtalk"));
  EXPECT_THAT(slack_secret.status().message(), Not(HasSubstr("hooks.slack.com")));

  auto pd_without_key = Load("receivers:\n  - {name: pd, format: pagerduty}\n");
  ASSERT_FALSE(pd_without_key.ok());
  EXPECT_THAT(pd_without_key.status().message(), HasSubstr("receiver 'pd'"));
  EXPECT_THAT(pd_without_key.status().message(), HasSubstr("needs 'routing_key'"));

  auto key_elsewhere = Load("receivers:\n  - {url: \"https://x/y\", routing_key: K}\n");
  ASSERT_FALSE(key_elsewhere.ok());
  EXPECT_THAT(key_elsewhere.status().message(), HasSubstr("pagerduty only"));

  auto unknown = Load("receivers:\n  - {url: \"https://x/y\", signing_secret: K}\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("signing_secret"));
}

TEST(AgentConfigReceiversTest, UnknownFormatNamesTheNearest) {
  auto config = Load("receivers:\n  - {url: \"https://x/y\", format: discrod}\n");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("discord"));
}

}  // namespace
}  // namespace fulcrum::agent
