// The agent config's NCCL RAS keys (nccl-ras, nccl-ras-interval): an address or "off", and an
// interval the poller (telemetry/nccl_ras_poller.h) can keep.
#include <gtest/gtest.h>

#include "agent/config.h"

namespace fulcrum::agent {
namespace {

TEST(NcclRasConfigTest, AddressOffOrIpv4PortAndAnInterval) {
  AgentConfig c;
  EXPECT_EQ(c.nccl_ras, "127.0.0.1:28028");  // NCCL's default (ras_internal.h), polled when present
  ASSERT_TRUE(ParseAgentConfigYaml("nccl-ras: off\nnccl_ras_interval: 30s\n", "a.yaml", c).ok());
  EXPECT_EQ(c.nccl_ras, "off");
  EXPECT_DOUBLE_EQ(c.nccl_ras_interval_seconds, 30);
  EXPECT_TRUE(ValidateAgentConfig(c).ok());
  // In a file, refused at its line; set otherwise, by the check of the whole config.
  Status parsed = ParseAgentConfigYaml("nccl-ras: gpu-node:28028\n", "a.yaml", c);
  EXPECT_NE(parsed.message().find("a.yaml:1: nccl-ras: expected off or IPV4:PORT"),
            std::string::npos)
      << parsed.message();
  c.nccl_ras = "gpu-node:28028";
  Status st = ValidateAgentConfig(c);
  EXPECT_EQ(st.code(), StatusCode::kInvalidInput);
  EXPECT_NE(st.message().find("expected IPV4:PORT"), std::string::npos) << st.message();
  c.nccl_ras = "localhost:28028";
  c.nccl_ras_interval_seconds = 0.1;
  EXPECT_FALSE(ValidateAgentConfig(c).ok());
}

}  // namespace
}  // namespace fulcrum::agent
