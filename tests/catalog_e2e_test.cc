// End-to-end checks of the catalog commands through the real binary: gpus, offers, providers,
// catalog import/validate; table shape, --json contracts, exit codes, a broken catalog given with
// --catalog, and the user's offers.d overlay ($FULCRUM_OFFERS_DIR).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

size_t Widest(const std::string& text) {
  size_t widest = 0;
  for (const auto& line : Lines(text)) widest = std::max(widest, line.size());
  return widest;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class CatalogE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir("catalog_e2e");
    empty_offers_dir_ = tmp_ + "/no-offers.d";
    fs::create_directories(empty_offers_dir_);
  }
  void TearDown() override { fs::remove_all(tmp_); }

  // Runs fulcrum on the shipped catalog, isolated from the user's own offers.d.
  RunOutput Run(std::vector<std::string> args, const std::string& offers_dir = "") {
    args.insert(args.begin(), {"--catalog", SourcePath("catalog")});
    RunOptions options;
    options.env["FULCRUM_OFFERS_DIR"] = offers_dir.empty() ? empty_offers_dir_ : offers_dir;
    return RunFulcrum(args, options);
  }

  // Runs fulcrum on the catalog in `dir`.
  RunOutput RunOn(const std::string& dir, std::vector<std::string> args) {
    args.insert(args.begin(), {"--catalog", dir});
    RunOptions options;
    options.env["FULCRUM_OFFERS_DIR"] = empty_offers_dir_;
    return RunFulcrum(args, options);
  }

  // A copy of the shipped catalog in the temp dir, to break on purpose.
  std::string CopyCatalog() {
    std::string dir = tmp_ + "/catalog";
    fs::create_directories(dir);
    for (const char* file : {"gpus.csv", "offers.csv", "providers.csv", "currency.csv"}) {
      fs::copy_file(SourcePath("catalog/") + file, dir + "/" + file);
    }
    return dir;
  }

  std::string tmp_;
  std::string empty_offers_dir_;
};

TEST_F(CatalogE2eTest, OffersTableRanksCheapestEightGpuH100First) {
  RunOutput r =
      Run({"offers", "--gpu", "H100-SXM", "--min-gpus", "8", "--sort", "price", "--limit", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_GE(lines.size(), 7u) << r.out;
  EXPECT_EQ(lines[0].rfind("PROVIDER", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("$/GPU-H"), std::string::npos);
  EXPECT_EQ(lines[1].rfind("--------", 0), 0u);
  // catalog/offers.csv: vast 8x-H100_SXM-32-65536 at 16.00 USD/h is the cheapest 8x H100 SXM.
  EXPECT_EQ(lines[2].rfind("vast", 0), 0u) << lines[2];
  EXPECT_NE(lines[2].find("16.00"), std::string::npos) << lines[2];
  for (size_t i = 2; i < 7; ++i) EXPECT_NE(lines[i].find("8x H100"), std::string::npos) << lines[i];
  EXPECT_NE(r.out.find("5 of "), std::string::npos) << r.out;
}

TEST_F(CatalogE2eTest, OffersJsonIsSortedAndUsesUnitsInNames) {
  RunOutput r = Run({"offers", "--gpu", "h100-80gb", "--min-gpus", "8", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  const auto& offers = doc.at("offers");
  ASSERT_GE(offers.size(), 5u);
  double previous = 0;
  bool some_without_spot = false;
  for (const auto& offer : offers) {
    EXPECT_EQ(offer.at("gpu"), "H100-SXM5-80GB");
    EXPECT_GE(offer.at("gpu_count").get<int>(), 8);
    double price = offer.at("on_demand_usd_per_hour").get<double>();
    EXPECT_GE(price, previous);
    previous = price;
    EXPECT_DOUBLE_EQ(offer.at("usd_per_hour").get<double>(), price);
    some_without_spot = some_without_spot || offer.at("spot_usd_per_hour").is_null();
    EXPECT_TRUE(offer.contains("network_gbit_per_second"));
    EXPECT_FALSE(offer.at("source").get<std::string>().empty());
  }
  EXPECT_TRUE(some_without_spot);  // null, not 0, when spot is not offered
}

TEST_F(CatalogE2eTest, SpotProviderAndMaxPriceFilters) {
  RunOutput r = Run({"offers", "--spot", "--provider", "aws,GCP", "--max-price", "20", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto offers = nlohmann::json::parse(r.out).at("offers");
  ASSERT_FALSE(offers.empty());
  for (const auto& offer : offers) {
    std::string provider = offer.at("provider");
    EXPECT_TRUE(provider == "aws" || provider == "gcp") << provider;
    ASSERT_FALSE(offer.at("spot_usd_per_hour").is_null());
    EXPECT_LE(offer.at("spot_usd_per_hour").get<double>(), 20.0);
    EXPECT_DOUBLE_EQ(offer.at("usd_per_hour").get<double>(),
                     offer.at("spot_usd_per_hour").get<double>());
  }
}

TEST_F(CatalogE2eTest, SortByBf16TflopsPerUsdShowsTheColumn) {
  RunOutput r = Run({"offers", "--sort", "bf16-tflops-per-usd", "--limit", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(Lines(r.out)[0].find("TFLOPS/$"), std::string::npos) << r.out;
}

TEST_F(CatalogE2eTest, OffersUsageErrorsExitTwo) {
  RunOutput unknown_gpu = Run({"offers", "--gpu", "H900"});
  EXPECT_EQ(unknown_gpu.exit_code, 2);
  EXPECT_NE(unknown_gpu.err.find("found \"H900\""), std::string::npos) << unknown_gpu.err;
  EXPECT_NE(unknown_gpu.err.find("nearest: H100"), std::string::npos) << unknown_gpu.err;
  RunOutput bad_sort = Run({"offers", "--sort", "cheapest"});
  EXPECT_EQ(bad_sort.exit_code, 2);
  EXPECT_NE(bad_sort.err.find("--sort: expected price"), std::string::npos) << bad_sort.err;
  EXPECT_EQ(Run({"offers", "--provider", "nope"}).exit_code, 2);
  EXPECT_EQ(Run({"offers", "--min-gpus", "0"}).exit_code, 2);
  EXPECT_EQ(Run({"offers", "--max-price", "-3"}).exit_code, 2);
}

TEST_F(CatalogE2eTest, GpusTableFitsEightyColumnsAndJsonParses) {
  RunOutput table = Run({"gpus"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_LE(Widest(table.out), 80u) << table.out;
  EXPECT_NE(table.out.find("H100-SXM5-80GB"), std::string::npos);
  RunOutput json = Run({"gpus", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto gpus = nlohmann::json::parse(json.out).at("gpus");
  EXPECT_GE(gpus.size(), 20u);
  bool t4_seen = false;
  for (const auto& gpu : gpus) {
    EXPECT_GT(gpu.at("memory_gib").get<double>(), 0);
    EXPECT_TRUE(gpu.at("aliases").is_array());
    if (gpu.at("name") == "T4") {
      t4_seen = true;
      EXPECT_TRUE(gpu.at("bf16_tflops").is_null());  // Turing has no bf16: unknown, not 0
      EXPECT_DOUBLE_EQ(gpu.at("memory_bandwidth_gb_per_second").get<double>(), 320);
    }
  }
  EXPECT_TRUE(t4_seen);
}

TEST_F(CatalogE2eTest, ProvidersMatrixShowsVerdictsAndFigures) {
  RunOutput table = Run({"providers"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_LE(Widest(table.out), 80u) << table.out;
  std::string aws_line;
  for (const auto& line : Lines(table.out)) {
    if (line.rfind("aws ", 0) == 0) aws_line = line;
  }
  // catalog/providers.csv: AWS bills per second; p5.48xlarge has 3200 Gbit/s EFA.
  EXPECT_NE(aws_line.find("met (1 s)"), std::string::npos) << table.out;
  EXPECT_NE(aws_line.find("met (3200 Gb/s)"), std::string::npos) << table.out;
  RunOutput json = Run({"providers", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto providers = nlohmann::json::parse(json.out).at("providers");
  EXPECT_GE(providers.size(), 8u);
  for (const auto& p : providers) {
    const auto& evaluation = p.at("evaluation");
    for (const char* id :
         {"gpu_failure_rate", "inter_node_bandwidth", "billing_granularity", "support"}) {
      std::string verdict = evaluation.at(id).at("verdict");
      EXPECT_TRUE(verdict == "met" || verdict == "not met" || verdict == "unknown") << verdict;
      if (verdict == "unknown") {
        EXPECT_TRUE(evaluation.at(id).at("value").is_null());
      }
    }
    if (p.at("name") == "aws") {
      EXPECT_EQ(evaluation.at("billing_granularity").at("verdict"), "met");
      EXPECT_DOUBLE_EQ(p.at("billing_granularity_seconds").get<double>(), 1);
    }
  }
}

TEST_F(CatalogE2eTest, BrokenCatalogIsRefusedWithFileLineAndExitTwo) {
  std::string dir = CopyCatalog();
  std::string offers = ReadFile(dir + "/offers.csv");
  size_t line_count = Lines(offers).size();
  WriteFile(dir + "/offers.csv",
            offers + "aws,p9.huge,us-east-1,H100-SXM,8,192,2048,USD,-1,,nvlink,,test,,,,\n");
  RunOutput r = RunOn(dir, {"offers"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  std::string expected = dir + "/offers.csv:" + std::to_string(line_count + 1) +
                         ": on_demand_per_hour: expected a number from 0 to 100000, found \"-1\"";
  EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
}

TEST_F(CatalogE2eTest, UnknownGpuAndDuplicateKeyInCatalogExitTwo) {
  std::string dir = CopyCatalog();
  std::string offers = ReadFile(dir + "/offers.csv");
  WriteFile(dir + "/offers.csv", offers + "aws,p9.huge,us-east-1,H900,8,,,USD,1,,,,test,,,,\n");
  RunOutput unknown = RunOn(dir, {"gpus"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find(": gpu: expected a GPU name or alias of gpus.csv, found \"H900\""),
            std::string::npos)
      << unknown.err;
  WriteFile(dir + "/offers.csv",
            offers + "aws,p5.48xlarge,us-east-1,H100-SXM,8,,,USD,1,,,,test,,,,\n");
  RunOutput duplicate = RunOn(dir, {"catalog", "validate", "--no-user-offers"});
  EXPECT_EQ(duplicate.exit_code, 2);
  EXPECT_NE(duplicate.err.find("expected a unique provider + instance_type + region"),
            std::string::npos)
      << duplicate.err;
}

TEST_F(CatalogE2eTest, MissingCatalogFileExitsTwo) {
  std::string dir = CopyCatalog();
  fs::remove(dir + "/providers.csv");
  RunOutput r = RunOn(dir, {"providers"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir + "/providers.csv"), std::string::npos) << r.err;
}

TEST_F(CatalogE2eTest, UserOffersDirAddsAndReplacesOffers) {
  std::string user_dir = tmp_ + "/offers.d";
  fs::create_directories(user_dir);
  WriteFile(user_dir + "/mine.csv",
            "provider,instance_type,region,gpu,gpu_count,on_demand_per_hour,source\n"
            "mycloud,box-8,basement,H100-SXM,8,1.50,own hardware\n"
            "aws,p5.48xlarge,us-east-1,H100-SXM,8,2.00,negotiated 2026-11\n");
  RunOutput r = Run({"offers", "--gpu", "H100-SXM", "--min-gpus", "8", "--json"}, user_dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto offers = nlohmann::json::parse(r.out).at("offers");
  ASSERT_GE(offers.size(), 2u);
  EXPECT_EQ(offers[0].at("provider"), "mycloud");
  EXPECT_EQ(offers[1].at("instance_type"), "p5.48xlarge");
  EXPECT_DOUBLE_EQ(offers[1].at("on_demand_usd_per_hour").get<double>(), 2.00);
  EXPECT_EQ(offers[1].at("origin"), user_dir + "/mine.csv");
  int p5_count = 0;
  for (const auto& offer : offers) p5_count += offer.at("instance_type") == "p5.48xlarge";
  EXPECT_EQ(p5_count, 1);  // replaced, not duplicated

  WriteFile(user_dir + "/zz-bad.csv",
            "provider,instance_type,region,gpu,gpu_count,on_demand_per_hour,source\n"
            "mycloud,box-1,basement,H100-SXM,zero,1,own\n");
  RunOutput bad = Run({"offers"}, user_dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find(user_dir + "/zz-bad.csv:2: gpu_count: expected a whole number"),
            std::string::npos)
      << bad.err;
}

TEST_F(CatalogE2eTest, ImportSkyPilotGcpToStdoutAndBackThroughOffersDir) {
  std::string fixture = SourcePath("tests/fixtures/catalog/skypilot_gcp.csv");
  RunOutput r = Run({"catalog", "import", "--format", "skypilot", "--provider", "gcp", fixture});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0].rfind("provider,instance_type,region,gpu,gpu_count", 0), 0u);
  // host 0.73948 + A100 GPU 2.93391 = 3.67339 (the total the source notes for a2-highgpu-1g).
  EXPECT_EQ(lines[1].rfind("gcp,a2-highgpu-1g,us-central1,A100-SXM4-40GB,1,12,85,USD,3.67339,"
                           "1.80385,",
                           0),
            0u)
      << lines[1];
  EXPECT_NE(r.err.find("imported 2 offers from 10 rows"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("skipped 1 row: no GPU"), std::string::npos) << r.err;

  std::string user_dir = tmp_ + "/offers.d";
  fs::create_directories(user_dir);
  RunOutput to_file = Run({"catalog", "import", "--format", "skypilot", "--provider", "gcp",
                           fixture, "-o", user_dir + "/gcp.csv"});
  ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
  EXPECT_EQ(to_file.out, "");
  RunOutput offers =
      Run({"offers", "--gpu", "L4", "--provider", "gcp", "--min-gpus", "2"}, user_dir);
  ASSERT_EQ(offers.exit_code, 0) << offers.err;
  EXPECT_NE(offers.out.find("g2-standard-24"), std::string::npos) << offers.out;
}

TEST_F(CatalogE2eTest, ImportJsonAndErrors) {
  std::string fixture = SourcePath("tests/fixtures/catalog/skypilot_aws.csv");
  RunOutput json =
      Run({"catalog", "import", "--format", "skypilot", "--provider", "aws", fixture, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc.at("offers").size(), 3u);
  EXPECT_EQ(doc.at("rows_read"), 7);
  EXPECT_EQ(doc.at("skipped").size(), 2u);
  EXPECT_EQ(Run({"catalog", "import", "--format", "csv", "--provider", "aws", fixture}).exit_code,
            2);
  EXPECT_EQ(
      Run({"catalog", "import", "--format", "skypilot", "--provider", "aws", tmp_ + "/missing.csv"})
          .exit_code,
      2);
  EXPECT_EQ(Run({"catalog", "import", "--provider", "aws", fixture}).exit_code, 2);
}

// Issue 30: a malformed storage_prices.csv was dropped whole (`plan --disk-gb 500` exited 0
// saying no provider had a storage price) and `catalog validate` said ok: it checked 4 of the
// catalog's tables. Now a broken row of a cost table fails validate and plan with its file:line.
TEST_F(CatalogE2eTest, ABrokenRowInAnyCostTableFailsValidateAndPlan) {
  std::string dir = CopyCatalog();
  for (const char* file : {"storage.csv", "storage_prices.csv", "spot_bands.csv", "goodput.csv",
                           "models", "spot-traces"}) {
    fs::copy(SourcePath("catalog/") + file, dir + "/" + file, fs::copy_options::recursive);
  }
  const struct {
    const char* file;
    const char* bad_cell;  // replaces the first data row's second cell
  } cases[] = {{"storage_prices.csv", "ten"}, {"goodput.csv", "many"}, {"storage.csv", "fast"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string path = dir + "/" + c.file;
    const std::string good = ReadFile(path);
    std::vector<std::string> lines = Lines(good);
    size_t row = 1;  // the first data row after the header (and any # comments)
    while (row < lines.size() && (lines[row].empty() || lines[row][0] == '#')) ++row;
    ASSERT_LT(row, lines.size());
    const size_t a = lines[row].find(',');
    const size_t b = lines[row].find(',', a + 1);
    lines[row] = lines[row].substr(0, a + 1) + c.bad_cell + lines[row].substr(b);
    std::string broken;
    for (const std::string& line : lines) broken += line + "\n";
    WriteFile(path, broken);
    const std::string where = path + ":" + std::to_string(row + 1) + ":";
    RunOutput validate = RunOn(dir, {"catalog", "validate", "--no-user-offers"});
    EXPECT_EQ(validate.exit_code, 2) << validate.out;
    EXPECT_NE(validate.err.find(where), std::string::npos) << validate.err;
    EXPECT_NE(validate.err.find(std::string("found \"") + c.bad_cell), std::string::npos)
        << validate.err;
    RunOutput plan =
        RunOn(dir, {"plan", SourcePath("examples/llama-7b-finetune.yaml"), "--disk-gb", "500"});
    EXPECT_EQ(plan.exit_code, 2) << plan.out;
    EXPECT_NE(plan.err.find(where), std::string::npos) << plan.err;
    WriteFile(path, good);
  }
  RunOutput ok = RunOn(dir, {"catalog", "validate", "--no-user-offers", "--json"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const auto tables = nlohmann::json::parse(ok.out).at("catalog").at("tables");
  for (const char* file : {"storage.csv", "storage_prices.csv", "spot_bands.csv", "goodput.csv"})
    EXPECT_NE(std::find(tables.begin(), tables.end(), file), tables.end()) << file;
}

// Issue 30: catalog validate did not read the model presets or the spot traces; a broken preset
// failed only the command that used it. Each is now checked as its reader loads it.
TEST_F(CatalogE2eTest, ABrokenModelPresetOrSpotTraceFailsValidate) {
  std::string dir = CopyCatalog();
  for (const char* file : {"models", "spot-traces"})
    fs::copy(SourcePath("catalog/") + file, dir + "/" + file, fs::copy_options::recursive);
  const std::string model = dir + "/models/llama-2-7b.yaml";
  const std::string good = ReadFile(model);
  WriteFile(model, good + "layers: [oops\n");
  RunOutput validate = RunOn(dir, {"catalog", "validate", "--no-user-offers"});
  EXPECT_EQ(validate.exit_code, 2) << validate.out;
  EXPECT_NE(validate.err.find(model + ":"), std::string::npos) << validate.err;
  RunOutput estimate = RunOn(dir, {"estimate", "--model", "llama-2-7b", "--gpu", "H100-SXM"});
  EXPECT_EQ(estimate.exit_code, 2) << estimate.out;
  WriteFile(model, good);
  std::string trace;
  for (const auto& e : fs::recursive_directory_iterator(dir + "/spot-traces")) {
    if (e.path().extension() == ".json") trace = e.path().string();
  }
  ASSERT_FALSE(trace.empty());
  WriteFile(trace, "{\"not\": \"a trace\"");
  validate = RunOn(dir, {"catalog", "validate", "--no-user-offers"});
  EXPECT_EQ(validate.exit_code, 2) << validate.out;
  EXPECT_NE(validate.err.find(trace), std::string::npos) << validate.err;
}

// Seen: with one damaged trace, `catalog validate` exited 2 but `plan --pricing spot` exited 0
// and quietly took another risk model (per-instance MTTI 2.1 h -> 2537.5 h from the default band;
// no multi-node scaling), re-ranking every spot row. Each trace set the planner reads now stops it.
TEST_F(CatalogE2eTest, ADamagedSpotTraceStopsThePlanWithItsPath) {
  std::string dir = CopyCatalog();
  for (const char* sub : {"models", "spot-traces"})
    fs::copy(SourcePath("catalog/") + sub, dir + "/" + sub, fs::copy_options::recursive);
  const std::vector<std::string> plan = {"plan",      "--model", "llama-2-7b", "--tokens", "1B",
                                         "--pricing", "spot",    "--top",      "1"};
  RunOutput healthy = RunOn(dir, plan);
  ASSERT_EQ(healthy.exit_code, 0) << healthy.err;
  for (const char* set : {"preemption-1node", "availability-16node", "availability-1node"}) {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir + "/spot-traces/" + set)) {
      if (e.path().extension() == ".json") files.push_back(e.path().string());
    }
    ASSERT_FALSE(files.empty()) << set;
    std::sort(files.begin(), files.end());
    const std::string good = ReadFile(files[0]);
    WriteFile(files[0], good.substr(0, good.size() / 2));
    RunOutput r = RunOn(dir, plan);
    EXPECT_EQ(r.exit_code, 2) << set << ": " << r.out;
    EXPECT_NE(r.err.find(files[0]), std::string::npos) << set << ": " << r.err;
    WriteFile(files[0], good);
  }
}

TEST_F(CatalogE2eTest, ValidateShippedCatalog) {
  RunOutput r = Run({"catalog", "validate", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto catalog = nlohmann::json::parse(r.out).at("catalog");
  EXPECT_GE(catalog.at("gpus").get<int>(), 20);
  EXPECT_GE(catalog.at("offers").get<int>(), 100);
  EXPECT_GE(catalog.at("providers").get<int>(), 8);
  EXPECT_EQ(catalog.at("user_offers"), 0);
}

TEST_F(CatalogE2eTest, HelpExplainsOptionsWithExamples) {
  RunOutput r = Run({"help", "offers"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* text : {"--gpu", "--min-gpus", "--max-price", "--provider", "--region", "--spot",
                           "--sort", "--limit", "--json", "Examples:"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text;
  }
  RunOutput import = Run({"help", "catalog", "import"});
  ASSERT_EQ(import.exit_code, 0) << import.err;
  EXPECT_NE(import.out.find("AvailabilityZone"), std::string::npos);
}

}  // namespace
}  // namespace fulcrum::testing

// --- one offer filter: offers and plan resolve names the same way ---------------------------

namespace fulcrum::testing {
namespace {

class OfferFilterE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir("offer_filter_e2e");
    fs::create_directories(tmp_ + "/offers.d");
  }
  void TearDown() override { fs::remove_all(tmp_); }
  RunOutput Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--catalog", SourcePath("catalog")});
    RunOptions options;
    options.env["FULCRUM_OFFERS_DIR"] = tmp_ + "/offers.d";
    return RunFulcrum(args, options);
  }
  static std::vector<std::string> PlanArgs(std::vector<std::string> extra) {
    std::vector<std::string> args = {"plan", "--model", "llama-2-7b", "--tokens", "1B"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  std::string tmp_;
};

TEST_F(OfferFilterE2eTest, AFamilyNameMatchesEveryVariant) {
  RunOutput r = Run({"offers", "--gpu", "A100", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  std::set<std::string> gpus;
  for (const auto& offer : doc.at("offers")) gpus.insert(offer.at("gpu"));
  EXPECT_EQ(gpus, (std::set<std::string>{"A100-SXM4-40GB", "A100-SXM4-80GB", "A100-PCIe-40GB",
                                         "A100-PCIe-80GB"}));
  RunOutput sized = Run({"offers", "--gpu", "A100-80GB", "--json"});
  ASSERT_EQ(sized.exit_code, 0) << sized.err;
  const nlohmann::json sized_doc = nlohmann::json::parse(sized.out);
  ASSERT_FALSE(sized_doc.at("offers").empty());
  for (const auto& offer : sized_doc.at("offers")) {
    EXPECT_EQ(offer.at("gpu"), "A100-SXM4-80GB");
  }
}

TEST_F(OfferFilterE2eTest, OneGpuCommandsRefuseAFamilyListingItsVariants) {
  for (const char* command : {"estimate", "fit"}) {
    RunOutput r = Run({command, "--model", "llama-2-7b", "--gpu", "A100"});
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_NE(r.err.find("found the family \"A100\" of 4 variants: A100-SXM4-40GB, "
                         "A100-SXM4-80GB, A100-PCIe-40GB, A100-PCIe-80GB"),
              std::string::npos)
        << r.err;
  }
}

TEST_F(OfferFilterE2eTest, TyposNameTheNearestKnownNames) {
  RunOutput provider = Run({"offers", "--provider", "awz"});
  EXPECT_EQ(provider.exit_code, 2);
  EXPECT_NE(provider.err.find("found \"awz\"; nearest: aws"), std::string::npos) << provider.err;
  RunOutput gpu = Run({"offers", "--gpu", "H100,B2OO"});
  EXPECT_EQ(gpu.exit_code, 2);
  EXPECT_NE(gpu.err.find("found \"B2OO\"; nearest: B200"), std::string::npos) << gpu.err;
  RunOutput plan_provider = Run(PlanArgs({"--providers", "awz"}));
  EXPECT_EQ(plan_provider.exit_code, 2);
  EXPECT_NE(plan_provider.err.find("--providers: expected a provider of the catalog"),
            std::string::npos)
      << plan_provider.err;
  EXPECT_NE(plan_provider.err.find("found \"awz\"; nearest: aws"), std::string::npos);
  RunOutput plan_gpu = Run(PlanArgs({"--gpus", "H100,B2OO"}));
  EXPECT_EQ(plan_gpu.exit_code, 2);
  EXPECT_NE(plan_gpu.err.find("--gpus: gpu: expected"), std::string::npos) << plan_gpu.err;
  EXPECT_NE(plan_gpu.err.find("found \"B2OO\"; nearest: B200"), std::string::npos);
  RunOutput region = Run(PlanArgs({"--regions", "us-esat-1"}));
  EXPECT_EQ(region.exit_code, 2);
  EXPECT_NE(region.err.find("nearest: us-east-1"), std::string::npos) << region.err;
}

TEST_F(OfferFilterE2eTest, PricingNoOfferHasSaysSo) {
  RunOutput r = Run(PlanArgs({"--pricing", "reserved_1y"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--pricing: no offer of the catalog has reserved_1y prices"),
            std::string::npos)
      << r.err;
}

TEST_F(OfferFilterE2eTest, TheFilterThatEmptiedTheSetIsNamed) {
  RunOutput offers = Run({"offers", "--gpu", "B300", "--provider", "aws"});
  EXPECT_EQ(offers.exit_code, 2);
  EXPECT_NE(offers.err.find("no offer matches: --provider aws leaves none of the 2 offers that "
                            "pass --gpu B300"),
            std::string::npos)
      << offers.err;
  RunOutput plan = Run(PlanArgs({"--gpus", "B300", "--providers", "aws"}));
  EXPECT_EQ(plan.exit_code, 2);
  EXPECT_NE(plan.err.find("no offer matches: --providers aws leaves none of the 2 offers that "
                          "pass --gpus B300"),
            std::string::npos)
      << plan.err;
}

// Every plan row on an offer or GPU the catalog marks doubtful says so; a blank interconnect
// is planned as PCIe and flagged, never silently taken for PCIe.
TEST_F(OfferFilterE2eTest, PlanFlagsCatalogCaveatsAndUnknownInterconnects) {
  RunOutput caveat = Run(PlanArgs({"--gpus", "L4", "--providers", "gcp", "--json", "--top", "50"}));
  ASSERT_EQ(caveat.exit_code, 0) << caveat.err;
  auto doc = nlohmann::json::parse(caveat.out);
  const auto& rows = doc.at("candidates");
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    const auto& warnings = row.at("warnings");
    EXPECT_NE(std::find(warnings.begin(), warnings.end(), "catalog-caveat"), warnings.end())
        << row.dump();
  }
  // A provider's caveat counts too: Verda's per-second billing comes from a third-party file
  // (catalog/providers.csv), and the cost of every Verda row depends on it.
  RunOutput terms =
      Run(PlanArgs({"--method", "lora", "--providers", "verda", "--json", "--top", "50"}));
  ASSERT_EQ(terms.exit_code, 0) << terms.err;
  const auto verda = nlohmann::json::parse(terms.out).at("candidates");
  ASSERT_FALSE(verda.empty()) << terms.out;
  for (const auto& row : verda) {
    const auto& warnings = row.at("warnings");
    EXPECT_NE(std::find(warnings.begin(), warnings.end(), "catalog-caveat"), warnings.end())
        << row.dump();
  }
  RunOutput unknown =
      Run(PlanArgs({"--gpus", "H100-SXM", "--providers", "vast", "--json", "--top", "50"}));
  ASSERT_EQ(unknown.exit_code, 0) << unknown.err;
  auto vast = nlohmann::json::parse(unknown.out);
  int flagged = 0;
  for (const auto& row : vast.at("candidates")) {
    const auto& warnings = row.at("warnings");
    flagged +=
        std::find(warnings.begin(), warnings.end(), "interconnect-unknown") != warnings.end();
  }
  EXPECT_GT(flagged, 0) << unknown.out;
}

TEST_F(OfferFilterE2eTest, TablesMarkRowsWithACaveat) {
  RunOutput offers = Run({"offers", "--gpu", "L4", "--provider", "gcp", "--limit", "1"});
  ASSERT_EQ(offers.exit_code, 0) << offers.err;
  EXPECT_NE(offers.out.find("g2-standard-4 !"), std::string::npos) << offers.out;
  EXPECT_NE(offers.out.find("! = the catalog has a caveat"), std::string::npos) << offers.out;
  RunOutput gpus = Run({"gpus"});
  EXPECT_NE(gpus.out.find("A10G !"), std::string::npos) << gpus.out;
  EXPECT_EQ(gpus.out.find("A40 !"), std::string::npos) << gpus.out;  // fixed, no caveat left
}

TEST_F(OfferFilterE2eTest, ProvidersJsonGivesTheSourceOfEachCriterion) {
  RunOutput r = Run({"providers", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int unknown = 0, cells = 0;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  for (const auto& p : doc.at("providers")) {
    // Providers without any terms document (catalog/providers.csv says so) are all unknown by
    // declaration; the bound is on the ones whose terms were sourced.
    const bool documented = p.at("source").get<std::string>().rfind("no terms document", 0) != 0;
    for (const auto& [id, c] : p.at("evaluation").items()) {
      if (!documented) continue;
      cells += id != "gpu_failure_rate";
      if (c.at("verdict") == "unknown" && id != "gpu_failure_rate") ++unknown;
      if (c.at("verdict") != "unknown") {
        EXPECT_FALSE(c.at("source").is_null()) << p.at("name") << " " << id;
      }
    }
    const auto& failure = p.at("evaluation").at("gpu_failure_rate");
    EXPECT_EQ(failure.at("detail"), "not published");
    EXPECT_NE(failure.at("context").get<std::string>().find("3-11 % per GPU-year"),
              std::string::npos);
    EXPECT_NE(failure.at("source").get<std::string>().find("arXiv 2407.21783"), std::string::npos);
  }
  // 27 of 30 before the sourced terms, 15 then; 17 of 36 with alibaba and tencent (issue 32).
  EXPECT_LE(unknown, cells / 2) << r.out;
}

}  // namespace
}  // namespace fulcrum::testing
