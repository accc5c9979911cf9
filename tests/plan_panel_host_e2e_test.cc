// The planning panel, issue 25's question about the node's host: a full fine-tune in which each
// of 8 ranks loads its own bf16 copy of a 7B model (8 x 12.6 GiB) does not fit a node with
// 64 GiB of host RAM, whatever its GPUs. Asked through the real binary on the shipped catalog;
// before issue 25 host RAM was not checked (the vast 8x H100 64 GiB node ranked #2).
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

using nlohmann::json;

RunOptions NoUserOffers() {
  RunOptions o;
  static const std::string empty = MakeTempDir("panel-host-offers-d");
  o.env["FULCRUM_OFFERS_DIR"] = empty;
  return o;
}

// An offers.d directory (made once per `tag`) holding the one user offer `row`.
RunOptions OneUserOffer(const std::string& tag, const std::string& row) {
  static std::map<std::string, std::string> dirs;
  std::string& dir = dirs[tag];
  if (dir.empty()) {
    dir = MakeTempDir("panel-host-" + tag + "-d");
    std::ofstream(dir + "/mine.csv")
        << "provider,instance_type,region,gpu,gpu_count,vcpus,memory_gib,currency,"
           "on_demand_per_hour,spot_per_hour,interconnect,network_gbps,source,note,caveat\n"
        << row << "\n";
  }
  RunOptions o;
  o.env["FULCRUM_OFFERS_DIR"] = dir;
  return o;
}

// One user offer of 8 H100 whose vCPUs and host RAM are not given.
RunOptions UnknownHostOffer() {
  return OneUserOffer("unknown",
                      "homelab,8xH100-host-unknown,local,H100-SXM5-80GB,8,,,USD,16.00,,nvlink,,"
                      "test row,,");
}

json Plan(std::vector<std::string> extra, const RunOptions& options = NoUserOffers()) {
  std::vector<std::string> args = {"plan", SourcePath("examples/llama-7b-finetune.yaml"), "--top",
                                   "2000", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  RunOutput r = RunFulcrum(args, options);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0 || r.out.empty()) return json::object();
  return json::parse(r.out);
}

bool Warns(const json& c, const std::string& code) {
  for (const json& w : c["warnings"]) {
    if (w.is_string() ? w == code : w.value("code", "") == code) return true;
  }
  return false;
}

// The best-ranked row of `provider`'s `instance` (nullptr if none).
const json* Row(const json& d, const std::string& provider, const std::string& instance) {
  if (!d.contains("candidates")) return nullptr;
  for (const json& c : d["candidates"]) {
    if (c["provider"] == provider && c["instance_type"] == instance) return &c;
  }
  return nullptr;
}

// The same marketplace's 8x H100 node as kVast64 (GPUs, vCPUs, unstated interconnect, region,
// provider terms), with 1600 GiB of host RAM, at 1.3 times its on-demand price (16.00 USD/h in the
// shipped catalog): a user offer (offers.d), so that the comparison below rests on host RAM at a
// stated price ratio, not on whichever provider's list price happens to sit near the 64 GiB node's.
RunOptions RoomyVastOffer() {
  return OneUserOffer(
      "roomy",
      "vast,8x-H100_SXM-32-1638400,\"Vietnam, VN, AS\",H100-SXM5-80GB,8,32,1600,USD,"
      "20.80,,,,test row,,");
}

const char kVast64[] = "8x-H100_SXM-32-65536";       // vast: 8 H100, 32 vCPUs, 64 GiB host RAM
const char kVastRoomy[] = "8x-H100_SXM-32-1638400";  // RoomyVastOffer()
const char kGcp1872[] = "a3-highgpu-8g";             // gcp: 8 H100, 208 vCPUs, 1872 GiB host RAM

// H1. The 64 GiB node is flagged host-ram-short with the figures that make it so, and ranks
//     below a dearer 8x H100 node that can hold the eight copies (in the old plan
//     it ranked above one, #2-#3 against #4-#6); the 1872 GiB node carries no such warning.
TEST(PlanPanelHostTest, SixtyFourGibCannotLoadEightCopiesOfA7b) {
  const json d = Plan({});
  const json* vast = Row(d, "vast", kVast64);
  const json* gcp = Row(d, "gcp", kGcp1872);
  ASSERT_NE(vast, nullptr);
  ASSERT_NE(gcp, nullptr);
  EXPECT_TRUE(Warns(*vast, "host-ram-short")) << (*vast)["warnings"];
  const json& h = (*vast)["host"];
  EXPECT_EQ(h["ram_gib"], 64);
  EXPECT_EQ(h["vcpus"], 32);
  // Eight bf16 copies of 6.74 B parameters: over 100 GiB.
  EXPECT_GT(h["ram_needed_gib"].get<double>(), 100);
  EXPECT_LE(h["vcpus_needed"].get<int>(), 32);
  EXPECT_FALSE(Warns(*vast, "host-cpu-short"));
  EXPECT_FALSE(Warns(*gcp, "host-ram-short")) << (*gcp)["warnings"];
  EXPECT_EQ((*gcp)["host"]["ram_gib"], 1872);

  // Ranked below a dearer 8x H100 node that holds the copies. The shipped catalog first gave one
  // (GCP's a3-highgpu-8g, then Hyperstack's and Nebius's 8x H100 at 1.3 times the P90 cost); at
  // the providers' current list prices every 8x H100 node that holds the copies costs 1.4 times
  // as much or more at P90 and the 64 GiB node ranks above those in its tier (docs/CHANGELOG.md).
  // So the comparison is made with the same node given the RAM, at the 1.3 times it was made at.
  const json r = Plan({}, RoomyVastOffer());
  const json* short_node = Row(r, "vast", kVast64);
  const json* holds = Row(r, "vast", kVastRoomy);
  ASSERT_NE(short_node, nullptr);
  ASSERT_NE(holds, nullptr);
  EXPECT_FALSE(Warns(*holds, "host-ram-short"));
  EXPECT_EQ((*holds)["unconfirmed"], (*short_node)["unconfirmed"]) << "same ranking tier";
  // Dearer than the 64 GiB node at P90, so that its rank is not bought by its price.
  EXPECT_GT((*holds)["cost"]["p90_usd"].get<double>(),
            1.25 * (*short_node)["cost"]["p90_usd"].get<double>());
  EXPECT_GT((*short_node)["rank"].get<int>(), (*holds)["rank"].get<int>());
}

// H3. Unknown is not zero: the same 8x H100 with no vCPU or RAM figure is not flagged, and
//     --strict-host keeps it; the JSON says the figures are unknown.
TEST(PlanPanelHostTest, UnknownHostFiguresAreNotAShortfall) {
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--providers", "homelab"},
        std::vector<std::string>{"--providers", "homelab", "--strict-host"}}) {
    const json d = Plan(extra, UnknownHostOffer());
    const json* mine = Row(d, "homelab", "8xH100-host-unknown");
    ASSERT_NE(mine, nullptr) << extra.back();
    EXPECT_TRUE((*mine)["host"]["ram_gib"].is_null());
    EXPECT_TRUE((*mine)["host"]["vcpus"].is_null());
    EXPECT_GT((*mine)["host"]["ram_needed_gib"].get<double>(), 100);
    EXPECT_FALSE(Warns(*mine, "host-ram-short") || Warns(*mine, "host-cpu-short"));
  }
}

// H2. --strict-host drops the nodes that are short (and only flags otherwise): the 64 GiB node
//     is gone, the 1872 GiB one stays, no row is short.
TEST(PlanPanelHostTest, StrictHostDropsTheShortNodes) {
  const json d = Plan({"--strict-host"});
  ASSERT_TRUE(d.contains("candidates"));
  EXPECT_EQ(Row(d, "vast", kVast64), nullptr);
  EXPECT_NE(Row(d, "gcp", kGcp1872), nullptr);
  for (const json& c : d["candidates"]) {
    EXPECT_FALSE(Warns(c, "host-ram-short") || Warns(c, "host-cpu-short"))
        << c["provider"] << " " << c["instance_type"];
  }
}

// H3. The spec says it too: `constraints: {strict_host: true}` is --strict-host (issue 25: the
//     key was refused as unknown).
TEST(PlanPanelHostTest, StrictHostInTheSpecDropsTheShortNodes) {
  const std::string dir = MakeTempDir("panel-host-spec");
  std::ofstream(dir + "/strict.yaml")
      << FileContents(SourcePath("examples/llama-7b-finetune.yaml")) << "  strict_host: true\n";
  RunOutput r =
      RunFulcrum({"plan", dir + "/strict.yaml", "--top", "2000", "--json"}, NoUserOffers());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json d = json::parse(r.out);
  EXPECT_EQ(Row(d, "vast", kVast64), nullptr);
  EXPECT_NE(Row(d, "gcp", kGcp1872), nullptr);
  EXPECT_NE(Row(Plan({}), "vast", kVast64), nullptr) << "without it the short node stays";
}

}  // namespace
}  // namespace fulcrum::testing
