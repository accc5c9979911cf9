// Renting in China (issue 32) through the real binary: the China-market cards in `gpus`, the
// Chinese clouds in `providers` and `offers` (no citable price list: listed last as unknown,
// billed in CNY), a saved Alibaba / Tencent price response imported into offers.d and planned,
// and bad price files refused with exit 2 naming file, line, expected and found.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

namespace fs = std::filesystem;

std::string Fixture(const std::string& name) { return SourcePath("tests/fixtures/prices/" + name); }

class ChinaE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir("china_e2e");
    offers_dir_ = tmp_ + "/offers.d";
    fs::create_directories(offers_dir_);
  }
  void TearDown() override { fs::remove_all(tmp_); }
  // fulcrum on the shipped catalog with this test's own offers.d.
  RunOutput Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--catalog", SourcePath("catalog")});
    RunOptions options;
    options.env["FULCRUM_OFFERS_DIR"] = offers_dir_;
    return RunFulcrum(args, options);
  }
  RunOutput Plan(std::vector<std::string> extra) {
    std::vector<std::string> args = {"plan", "--model", "llama-2-7b", "--tokens", "1B"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Run(args);
  }
  std::string tmp_;
  std::string offers_dir_;
};

TEST_F(ChinaE2eTest, GpusListTheChinaMarketCardsWithTheirNvlink) {
  RunOutput r = Run({"gpus", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto gpus = nlohmann::json::parse(r.out).at("gpus");
  int found = 0;
  for (const auto& gpu : gpus) {
    const std::string name = gpu.at("name");
    if (name == "H800-SXM5-80GB" || name == "A800-SXM4-80GB" || name == "A800-SXM4-40GB") {
      EXPECT_EQ(gpu.at("nvlink_gb_per_second").get<double>(), 400) << name;
      ++found;
    }
    if (name == "L20" || name == "H800-PCIe-80GB" || name == "A800-PCIe-80GB") ++found;
    if (name.rfind("H800", 0) == 0 || name.rfind("A800", 0) == 0 || name == "L20") {
      EXPECT_FALSE(gpu.at("source").get<std::string>().empty()) << name;
      EXPECT_FALSE(gpu.at("caveat").is_null()) << name << ": third-party or cloud-doc figures";
    }
  }
  EXPECT_EQ(found, 6) << r.out;
}

TEST_F(ChinaE2eTest, OffersListGnInstancesWithGpusVcpusMemoryAndUnknownPrice) {
  RunOutput table = Run({"offers", "--provider", "alibaba"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  std::istringstream lines(table.out);
  bool gn7 = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("ecs.gn7-c13g1.26xlarge") == std::string::npos) continue;
    gn7 = true;
    EXPECT_NE(line.find("8x A100"), std::string::npos) << line;
    EXPECT_NE(line.find(" 104 "), std::string::npos) << line;  // vCPUs
    EXPECT_NE(line.find(" 760 "), std::string::npos) << line;  // GiB
    EXPECT_NE(line.find("unknown"), std::string::npos) << line;
    EXPECT_NE(line.find("CNY"), std::string::npos) << line;
  }
  EXPECT_TRUE(gn7) << table.out;
  EXPECT_NE(table.out.find("unknown = no citable price list"), std::string::npos) << table.out;

  // Ranked last: every priced 8x A100 40GB offer comes before the unknown ones.
  RunOutput json = Run({"offers", "--gpu", "A100-SXM4-40GB", "--min-gpus", "8", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  bool seen_unknown = false, priced = false, unknown = false;
  const nlohmann::json listed = nlohmann::json::parse(json.out);
  for (const auto& offer : listed.at("offers")) {
    const bool is_unknown = offer.at("usd_per_hour").is_null();
    if (is_unknown) {
      EXPECT_EQ(offer.at("caveat").get<std::string>().rfind("price-unknown:", 0), 0u);
      EXPECT_EQ(offer.at("quoted_currency"), "CNY");
      EXPECT_FALSE(offer.at("vcpus").is_null());
    }
    EXPECT_FALSE(seen_unknown && !is_unknown) << "a priced offer after an unknown one";
    seen_unknown = seen_unknown || is_unknown;
    priced = priced || !is_unknown;
    unknown = unknown || is_unknown;
  }
  EXPECT_TRUE(priced && unknown) << json.out;
  // A price limit cannot be met by an unknown price.
  RunOutput capped = Run({"offers", "--provider", "alibaba", "--max-price", "1000"});
  EXPECT_EQ(capped.exit_code, 0) << capped.err;
  EXPECT_EQ(capped.out.find("ecs.gn7"), std::string::npos) << capped.out;
}

TEST_F(ChinaE2eTest, ProvidersEvaluateTheChineseCloudsCellBySourcedOrUnknown) {
  RunOutput r = Run({"providers", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = r.out;
  for (const char* id : {"\"alibaba\"", "\"tencent\"", "\"volcengine\"", "\"baidu\"", "\"autodl\""})
    EXPECT_NE(text.find(id), std::string::npos) << id;
  RunOutput table = Run({"providers"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  std::istringstream lines(table.out);
  int rows = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("alibaba", 0) == 0) {
      ++rows;
      EXPECT_NE(line.find("met (1 s)"), std::string::npos) << line;
    }
    if (line.rfind("volcengine", 0) == 0 || line.rfind("baidu", 0) == 0) {
      ++rows;
      EXPECT_EQ(line.find(" met"), std::string::npos) << "no sourced term: " << line;
    }
  }
  EXPECT_EQ(rows, 3) << table.out;
}

// Without a price the planner never costs an offer; with a saved Alibaba price it plans it.
TEST_F(ChinaE2eTest, AnImportedAlibabaPriceIsPlanned) {
  RunOutput before = Plan({"--providers", "alibaba", "--gpus", "A100-SXM4-40GB", "--json"});
  EXPECT_EQ(before.exit_code, 2) << before.out;
  EXPECT_NE(before.err.find("none has a citable price"), std::string::npos) << before.err;

  // As on a fresh home, where docs/CHINA.md's `-o ~/.config/fulcrum/offers.d/...` has no
  // directory yet (seen: "cannot write", exit 1).
  fs::remove_all(offers_dir_);
  RunOutput imported = Run({"catalog", "import", "--format", "alibaba",
                            Fixture("alibaba_describe_price_hourly.json"), "--instance-type",
                            "ecs.gn7-c13g1.26xlarge", "--region", "cn-hangzhou", "-o",
                            offers_dir_ + "/alibaba.csv"});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_NE(imported.err.find("imported 1 offers"), std::string::npos) << imported.err;

  RunOutput offers = Run({"offers", "--provider", "alibaba", "--json"});
  ASSERT_EQ(offers.exit_code, 0) << offers.err;
  const auto first = nlohmann::json::parse(offers.out).at("offers").at(0);
  EXPECT_EQ(first.at("region"), "cn-hangzhou");
  EXPECT_EQ(first.at("on_demand_billed_per_hour").get<double>(), 100);
  EXPECT_EQ(first.at("quoted_currency"), "CNY");

  RunOutput after = Plan({"--providers", "alibaba", "--gpus", "A100-SXM4-40GB", "--json"});
  ASSERT_EQ(after.exit_code, 0) << after.err;
  const auto candidates = nlohmann::json::parse(after.out).at("candidates");
  ASSERT_FALSE(candidates.empty()) << after.out;
  for (const auto& c : candidates) {
    EXPECT_EQ(c.at("instance_type"), "ecs.gn7-c13g1.26xlarge") << c.dump();
    EXPECT_EQ(c.at("region"), "cn-hangzhou") << c.dump();
  }
}

// `plan --gpus H800` on an offer the user adds (the shipped Chinese rows carry no H800 and no
// price): the same 8-GPU node as an H100 one, same price; the plan's communication time on the
// H800 is longer by its NVLink (400 GB/s against 900), so for the same layout it is slower.
TEST_F(ChinaE2eTest, PlanGpusH800OnAUsersOfferRunsItsLayoutsOnItsNvlink) {
  std::ofstream csv(offers_dir_ + "/mine.csv");
  csv << "provider,instance_type,region,gpu,gpu_count,vcpus,memory_gib,currency,"
         "on_demand_per_hour,spot_per_hour,interconnect,network_gbps,source,note,caveat\n";
  for (const char* row :
       {"my_8x_h800,us-east-1,H800-SXM5-80GB", "my_8x_h100,us-east-1,H100-SXM5-80GB"})
    csv << "lambda," << row << ",8,208,1800,USD,31.92,,nvlink,,the user's own quote,,\n";
  csv.close();
  RunOutput r = Plan({"--gpus", "H800,H100-SXM", "--providers", "lambda", "--framework", "megatron",
                      "--top", "40", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::pair<double, double>> by_layout;  // layout -> (H800, H100) tok/s
  const auto plan = nlohmann::json::parse(r.out);
  for (const auto& c : plan.at("candidates")) {
    const std::string type = c.at("instance_type");
    if (type != "my_8x_h800" && type != "my_8x_h100") continue;
    const auto& p = c.at("parallel");
    const std::string layout = p.at("framework").get<std::string>() + " tp" +
                               std::to_string(p.at("tp").get<int>()) + " pp" +
                               std::to_string(p.at("pp").get<int>()) + " mb" +
                               std::to_string(p.at("micro_batch").get<int>());
    const double tps = c.at("time").at("tokens_per_second").get<double>();
    (type == "my_8x_h800" ? by_layout[layout].first : by_layout[layout].second) = tps;
  }
  int compared = 0;
  for (const auto& [layout, tps] : by_layout) {
    if (tps.first <= 0 || tps.second <= 0) continue;
    ++compared;
    EXPECT_LT(tps.first, tps.second) << layout;
  }
  EXPECT_GE(compared, 1) << r.out;
}

// The China-market cards' instance types in the shipped catalog (issue: no H20 / H800 / A800
// instance was shipped): Alibaba's gn8v / ebmgn8v (H20 by the doc's figures, NVLink)
// and Volcano Engine's ebmhpcpni3l (from a third-party guide), each with its source and caveat.
TEST_F(ChinaE2eTest, H20InstanceTypesLoadWithTheirSourcesAndCaveats) {
  RunOutput r = Run({"offers", "--gpu", "H20", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json listed = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> by_type;
  for (const auto& offer : listed.at("offers"))
    by_type[offer.at("instance_type").get<std::string>()] = offer;
  ASSERT_TRUE(by_type.count("ecs.gn8v-8x.48xlarge")) << r.out;
  const auto& gn8v = by_type["ecs.gn8v-8x.48xlarge"];
  EXPECT_EQ(gn8v.at("provider"), "alibaba");
  EXPECT_EQ(gn8v.at("gpu_count").get<int>(), 8);
  EXPECT_EQ(gn8v.at("vcpus").get<int>(), 192);
  EXPECT_EQ(gn8v.at("memory_gib").get<double>(), 1024);
  EXPECT_EQ(gn8v.at("interconnect"), "nvlink");
  EXPECT_EQ(gn8v.at("quoted_currency"), "CNY");
  EXPECT_TRUE(gn8v.at("on_demand_usd_per_hour").is_null());
  EXPECT_NE(gn8v.at("source").get<std::string>().find("900 GB/s NVLink"), std::string::npos);
  const std::string caveat = gn8v.at("caveat");
  EXPECT_EQ(caveat.rfind("price-unknown:", 0), 0u) << caveat;
  EXPECT_NE(caveat.find("does not name the GPU model"), std::string::npos) << caveat;
  for (const char* type : {"ecs.gn8v.4xlarge", "ecs.ebmgn8v.48xlarge"})
    EXPECT_TRUE(by_type.count(type)) << type;
  ASSERT_TRUE(by_type.count("ecs.ebmhpcpni3l.48xlarge")) << r.out;
  const auto& volc = by_type["ecs.ebmhpcpni3l.48xlarge"];
  EXPECT_EQ(volc.at("provider"), "volcengine");
  EXPECT_EQ(volc.at("memory_gib").get<double>(), 2048);
  EXPECT_NE(volc.at("source").get<std::string>().find("vllm-project/aibrix"), std::string::npos);
  EXPECT_NE(volc.at("caveat").get<std::string>().find("spec-unverified"), std::string::npos);

  RunOutput table = Run({"offers", "--provider", "volcengine"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("ecs.ebmhpcpni3l.48xlarge"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("8x H20"), std::string::npos) << table.out;
}

// No cloud document naming an H800 instance type was found, so the catalog ships none and a
// price cannot be imported for one; the user adds the instance type (unpriced, as the shipped
// Chinese rows), imports the provider's saved price for it, and the plan runs it on NVLink.
TEST_F(ChinaE2eTest, AnH800InstanceTheUserAddsTakesAnImportedPriceAndPlansOnNvlink) {
  const std::string fixture = Fixture("tencent_inquiry_price_hourly.json");
  const std::vector<std::string> import = {"catalog",
                                           "import",
                                           "--format",
                                           "tencent",
                                           fixture,
                                           "--instance-type",
                                           "MY.H800",
                                           "--region",
                                           "ap-shanghai",
                                           "-o",
                                           offers_dir_ + "/tencent.csv"};
  RunOutput unknown = Run(import);
  EXPECT_EQ(unknown.exit_code, 2) << unknown.out;
  EXPECT_NE(unknown.err.find("expected an instance type of tencent in the catalog"),
            std::string::npos)
      << unknown.err;

  std::ofstream csv(offers_dir_ + "/mine.csv");
  csv << "provider,instance_type,region,gpu,gpu_count,vcpus,memory_gib,currency,"
         "on_demand_per_hour,spot_per_hour,interconnect,network_gbps,source,note,caveat\n"
         "tencent,MY.H800,unspecified,H800-SXM5-80GB,8,192,2048,CNY,,,nvlink,,the user's "
         "console,,price-unknown: asked for in the console\n";
  csv.close();
  RunOutput before = Plan({"--providers", "tencent", "--gpus", "H800", "--json"});
  EXPECT_EQ(before.exit_code, 2) << before.out;
  EXPECT_NE(before.err.find("none has a citable price"), std::string::npos) << before.err;

  RunOutput imported = Run(import);
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  RunOutput after = Plan({"--providers", "tencent", "--gpus", "H800", "--json"});
  ASSERT_EQ(after.exit_code, 0) << after.err;
  const auto candidates = nlohmann::json::parse(after.out).at("candidates");
  ASSERT_FALSE(candidates.empty()) << after.out;
  for (const auto& c : candidates) {
    EXPECT_EQ(c.at("instance_type"), "MY.H800") << c.dump();
    EXPECT_EQ(c.at("region"), "ap-shanghai") << c.dump();
    EXPECT_EQ(c.at("gpu"), "H800-SXM5-80GB") << c.dump();
    EXPECT_EQ(c.at("gpus_per_node").get<int>(), 8) << c.dump();
    EXPECT_TRUE(c.at("unconfirmed").empty()) << "price and NVLink confirmed: " << c.dump();
  }
  // The priced offer keeps the row's NVLink (and loses its price-unknown caveat).
  RunOutput offers = Run({"offers", "--gpu", "H800", "--region", "ap-shanghai", "--json"});
  ASSERT_EQ(offers.exit_code, 0) << offers.err;
  const nlohmann::json priced = nlohmann::json::parse(offers.out).at("offers").at(0);
  EXPECT_EQ(priced.at("interconnect"), "nvlink") << priced.dump();
  EXPECT_EQ(priced.at("on_demand_billed_per_hour").get<double>(), 3.33) << priced.dump();
  EXPECT_TRUE(priced.at("caveat").is_null()) << priced.dump();
  // The NVLink the plan charges the H800's collectives at: 400 GB/s, not the H100's 900.
  RunOutput gpus = Run({"gpus", "--json"});
  ASSERT_EQ(gpus.exit_code, 0) << gpus.err;
  int h800 = 0;
  const nlohmann::json cards = nlohmann::json::parse(gpus.out);
  for (const auto& gpu : cards.at("gpus")) {
    if (gpu.at("name") != "H800-SXM5-80GB") continue;
    ++h800;
    EXPECT_EQ(gpu.at("nvlink_gb_per_second").get<double>(), 400);
  }
  EXPECT_EQ(h800, 1) << gpus.out;
}

TEST_F(ChinaE2eTest, ATencentPriceImportsAtTheRateGiven) {
  RunOutput r = Run({"catalog", "import", "--format", "tencent",
                     Fixture("tencent_inquiry_price_hourly.json"), "--instance-type",
                     "GT4.41XLARGE948", "--region", "ap-guangzhou", "--usd-per-cny", "0.125"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      r.out.find("tencent,GT4.41XLARGE948,ap-guangzhou,A100-SXM4-40GB,8,164,948,USD,0.41625,"),
      std::string::npos)
      << r.out;
}

TEST_F(ChinaE2eTest, BadPriceFilesExitTwoWithFileLineExpectedAndFound) {
  const std::string tencent = Fixture("tencent_inquiry_price_hourly.json");
  RunOutput other = Run({"catalog", "import", "--format", "alibaba", tencent, "--instance-type",
                         "ecs.gn7-c13g1.26xlarge", "--region", "cn-hangzhou"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find(tencent + ":2: expected an Alibaba Cloud DescribePrice"),
            std::string::npos)
      << other.err;
  EXPECT_NE(other.err.find("--format tencent"), std::string::npos) << other.err;

  RunOutput family =
      Run({"catalog", "import", "--format", "alibaba", Fixture("alibaba_describe_price.json"),
           "--instance-type", "ecs.gn9-c13g1.26xlarge", "--region", "cn-hangzhou"});
  EXPECT_EQ(family.exit_code, 2);
  EXPECT_NE(family.err.find("did you mean ecs.gn7-c13g1.26xlarge"), std::string::npos)
      << family.err;

  const std::string usd = Fixture("alibaba_describe_price_usd.json");
  RunOutput mismatch =
      Run({"catalog", "import", "--format", "alibaba", usd, "--instance-type",
           "ecs.gn7-c13g1.26xlarge", "--region", "cn-hangzhou", "--usd-per-cny", "0.14"});
  EXPECT_EQ(mismatch.exit_code, 2);
  EXPECT_NE(mismatch.err.find(usd + ":5: Currency: expected a price billed in CNY"),
            std::string::npos)
      << mismatch.err;

  RunOutput format = Run({"catalog", "import", "--format", "aliyun", tencent});
  EXPECT_EQ(format.exit_code, 2);
  EXPECT_NE(format.err.find("--format: expected skypilot, alibaba, tencent"), std::string::npos)
      << format.err;
}

}  // namespace
}  // namespace fulcrum::testing
