// Acceptance on arrival through the real binary: `fulcrum plan --json` writes a plan, `fulcrum
// bench --source sim --expect plan.json` judges a sim node of the plan's GPU and count: at 60 % of
// its datasheet it is rejected (exit 3) with reasons, a healthy one (100 %) is accepted (exit 0);
// with --release-on-reject the agent config's idle release argv is printed (dry run) or run
// (--arm; here a harmless `touch`).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

struct Plan {
  std::string dir, path, gpu, gpus;
};

Plan WritePlan(const std::string& name) {
  Plan p;
  p.dir = MakeTempDir(name);
  p.path = p.dir + "/plan.json";
  RunOutput plan = RunFulcrum({"plan", "--model", "llama-2-7b", "--tokens", "1B", "--gpus",
                               "H100-SXM5-80GB", "--top", "3", "--json"});
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  std::ofstream(p.path) << plan.out;
  auto doc = nlohmann::json::parse(plan.out);
  const auto& first = doc["candidates"][0];
  p.gpu = first["gpu"].get<std::string>();
  p.gpus = std::to_string(first["gpus_per_node"].get<int>());
  return p;
}

// The disk part is skipped: its figure is this machine's disk speed, which a test must not
// assert; the verdict logic for it is unit-tested (acceptance_test.cc).
std::vector<std::string> SimBench(const Plan& p, const std::string& fraction) {
  return {"bench",          "--source", "sim",     "--sim-gpu",   p.gpu,      "--sim-gpus", p.gpus,
          "--sim-fraction", fraction,   "--quick", "--skip-disk", "--expect", p.path};
}

const nlohmann::json* CheckNamed(const nlohmann::json& doc, const std::string& name) {
  for (const auto& c : doc["checks"]) {
    if (c["name"] == name) return &c;
  }
  return nullptr;
}

TEST(BenchExpectE2eTest, SlowSimNodeIsRejectedAndHealthyOneAccepted) {
  Plan p = WritePlan("expect");
  auto args = SimBench(p, "0.6");
  args.push_back("--json");
  RunOutput slow = RunFulcrum(args);
  ASSERT_EQ(slow.exit_code, 3) << slow.out << slow.err;
  auto doc = nlohmann::json::parse(slow.out);
  EXPECT_EQ(doc["verdict"], "reject");
  ASSERT_FALSE(doc["reasons"].empty());
  const auto* gemm = CheckNamed(doc, "gemm-bf16");
  ASSERT_NE(gemm, nullptr) << slow.out;
  EXPECT_EQ((*gemm)["verdict"], "reject");
  EXPECT_NEAR((*gemm)["measured"].get<double>() / (*gemm)["expected"].get<double>(), 0.6, 1e-9);
  EXPECT_EQ((*CheckNamed(doc, "gpu-model"))["verdict"], "accept");
  EXPECT_EQ((*CheckNamed(doc, "gpu-count"))["measured"].get<double>(), std::stod(p.gpus));
  EXPECT_TRUE(doc["gpu"].is_object()) << "the bench's own result stays in the object";

  RunOutput healthy = RunFulcrum(SimBench(p, "1.0"));
  ASSERT_EQ(healthy.exit_code, 0) << healthy.out << healthy.err;
  EXPECT_NE(healthy.out.find("verdict: accept"), std::string::npos) << healthy.out;
  EXPECT_NE(healthy.out.find("gemm-bf16"), std::string::npos);

  RunOutput table = RunFulcrum(SimBench(p, "0.6"));
  EXPECT_EQ(table.exit_code, 3);
  EXPECT_NE(table.out.find("verdict: reject"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("60 % of the"), std::string::npos) << table.out;
  std::filesystem::remove_all(p.dir);
}

TEST(BenchExpectE2eTest, ThrottlingOrNoisySimNodeIsRejected) {
  Plan p = WritePlan("expect-noisy");
  auto args = SimBench(p, "1.0");
  args.insert(args.end(), {"--sim-swing", "0.4", "--json"});
  RunOutput noisy = RunFulcrum(args);
  ASSERT_EQ(noisy.exit_code, 3) << noisy.out << noisy.err;
  auto doc = nlohmann::json::parse(noisy.out);
  EXPECT_EQ((*CheckNamed(doc, "stability"))["verdict"], "reject");
  EXPECT_EQ((*CheckNamed(doc, "gemm-bf16"))["verdict"], "accept");

  std::string scenario = p.dir + "/throttle.yaml";
  std::ofstream(scenario) << "- {at: 2s, gpu: 0, fault: thermal-slowdown}\n";
  args = SimBench(p, "1.0");
  args.insert(args.end(), {"--sim-scenario", scenario, "--json"});
  RunOutput throttled = RunFulcrum(args);
  ASSERT_EQ(throttled.exit_code, 3) << throttled.out << throttled.err;
  doc = nlohmann::json::parse(throttled.out);
  EXPECT_EQ((*CheckNamed(doc, "stability"))["verdict"], "reject");
  std::filesystem::remove_all(p.dir);
}

TEST(BenchExpectE2eTest, ReleaseOnRejectIsADryRunUnlessArmed) {
  Plan p = WritePlan("expect-release");
  std::string marker = p.dir + "/released";
  std::string config = p.dir + "/agent.yaml";
  std::ofstream(config) << "idle:\n  command: [touch, " << marker << "]\n";
  auto args = SimBench(p, "0.6");
  args.insert(args.end(), {"--release-on-reject", "--agent-config", config});
  RunOutput dry = RunFulcrum(args);
  ASSERT_EQ(dry.exit_code, 3) << dry.out << dry.err;
  EXPECT_NE(dry.out.find("would run: touch " + marker), std::string::npos) << dry.out;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a dry run runs nothing";

  // A healthy node is never released, armed or not.
  auto healthy = SimBench(p, "1.0");
  healthy.insert(healthy.end(), {"--release-on-reject", "--arm", "--agent-config", config});
  EXPECT_EQ(RunFulcrum(healthy).exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(marker));

  args.insert(args.end(), {"--arm", "--json"});
  RunOutput armed = RunFulcrum(args);
  ASSERT_EQ(armed.exit_code, 3) << armed.out << armed.err;
  EXPECT_TRUE(std::filesystem::exists(marker)) << armed.out;
  auto doc = nlohmann::json::parse(armed.out);
  EXPECT_EQ(doc["release"]["ran"], true);
  EXPECT_EQ(doc["release"]["exit_code"], 0);
  EXPECT_EQ(doc["release"]["argv"], nlohmann::json({"touch", marker}));
  EXPECT_TRUE(doc["release"]["error"].is_null());

  // A release that fails is said, on stderr and in the JSON: the lemon is still billing.
  std::string failing = p.dir + "/failing.yaml";
  std::ofstream(failing) << "idle:\n  command: [false]\n";
  auto fails = SimBench(p, "0.6");
  fails.insert(fails.end(), {"--release-on-reject", "--arm", "--agent-config", failing, "--json"});
  RunOutput failed = RunFulcrum(fails);
  ASSERT_EQ(failed.exit_code, 3) << failed.err;
  doc = nlohmann::json::parse(failed.out);
  EXPECT_EQ(doc["release"]["exit_code"], 1);
  EXPECT_FALSE(doc["release"]["error"].is_null());
  EXPECT_NE(failed.err.find("release command failed"), std::string::npos) << failed.err;
  std::filesystem::remove_all(p.dir);
}

// The real source's path (fulcrum-gpubench's JSON, here a recorded H100 result printed by a
// stand-in program): the same verdict logic; and a node whose GPUs cannot be measured at all is
// not accepted.
TEST(BenchExpectE2eTest, RealSourceRecordedResultAndUnmeasurableGpu) {
  std::string dir = MakeTempDir("expect-real");
  std::string program = dir + "/gpubench.sh";
  std::ofstream(program) << "#!/bin/sh\ncat "
                         << SourcePath("tests/fixtures/bench/gpubench_h100.json") << "\n";
  std::filesystem::permissions(program, std::filesystem::perms::owner_all);
  RunOptions options;
  options.env["FULCRUM_GPUBENCH"] = program;
  RunOutput r = RunFulcrum({"bench", "--quick", "--skip-disk", "--offer",
                            "nebius:gpu-h100-sxm_1gpu-16vcpu-200gb", "--json"},
                           options);
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["source"], "nvml");
  EXPECT_EQ((*CheckNamed(doc, "gpu-model"))["verdict"], "accept");
  EXPECT_EQ((*CheckNamed(doc, "gemm-bf16"))["verdict"], "accept");  // 742.5 of 989: 75 %
  EXPECT_EQ((*CheckNamed(doc, "stability"))["verdict"], "reject");  // 440..720: a 40 % swing
  ASSERT_EQ(doc["reasons"].size(), 1u) << doc["reasons"].dump();
  EXPECT_NE(doc["reasons"][0].get<std::string>().find("swings"), std::string::npos);

  options.env["FULCRUM_GPUBENCH"] = dir + "/not-built";
  RunOutput none = RunFulcrum({"bench", "--quick", "--skip-disk", "--offer",
                               "nebius:gpu-h100-sxm_1gpu-16vcpu-200gb", "--json"},
                              options);
  ASSERT_EQ(none.exit_code, 3) << none.out << none.err;
  doc = nlohmann::json::parse(none.out);
  EXPECT_EQ((*CheckNamed(doc, "gpu-model"))["verdict"], "reject");
  EXPECT_NE(doc["reasons"][0].get<std::string>().find("could not be measured"), std::string::npos)
      << doc["reasons"].dump();
  std::filesystem::remove_all(dir);
}

TEST(BenchExpectE2eTest, OfferAndBadUsage) {
  RunOutput offer = RunFulcrum({"bench", "--source", "sim", "--sim-gpu", "H100-SXM5-80GB",
                                "--sim-gpus", "8", "--quick", "--skip-disk", "--offer",
                                "nebius:gpu-h100-sxm_8gpu-128vcpu-1600gb", "--json"});
  ASSERT_EQ(offer.exit_code, 0) << offer.out << offer.err;
  auto doc = nlohmann::json::parse(offer.out);
  const auto* link = CheckNamed(doc, "interconnect");
  ASSERT_NE(link, nullptr);
  EXPECT_EQ((*link)["verdict"], "accept");

  RunOutput unknown = RunFulcrum(
      {"bench", "--source", "sim", "--skip-disk", "--offer", "nebius:gpu-h100-sxm_8gpu", "--json"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("--offer"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("nebius:gpu-h100-sxm_8gpu-128vcpu-1600gb"), std::string::npos)
      << "nearest names: " << unknown.err;

  Plan p = WritePlan("expect-bad");
  RunOutput no_config = RunFulcrum(
      {"bench", "--source", "sim", "--skip-disk", "--expect", p.path, "--release-on-reject"});
  EXPECT_EQ(no_config.exit_code, 2);
  EXPECT_NE(no_config.err.find("--agent-config"), std::string::npos) << no_config.err;
  RunOutput as_json = RunFulcrum({"bench", "--source", "sim", "--skip-disk", "--expect", p.path,
                                  "--release-on-reject", "--json"});
  EXPECT_EQ(as_json.exit_code, 2);
  EXPECT_EQ(nlohmann::json::parse(as_json.err)["error"]["field"], "--release-on-reject")
      << as_json.err;
  RunOutput bad_pick =
      RunFulcrum({"bench", "--source", "sim", "--skip-disk", "--expect", p.path, "--pick", "99"});
  EXPECT_EQ(bad_pick.exit_code, 2);
  EXPECT_NE(bad_pick.err.find("--pick"), std::string::npos) << bad_pick.err;
  EXPECT_EQ(RunFulcrum({"bench", "--skip-disk", "--arm"}).exit_code, 2);
  EXPECT_EQ(RunFulcrum({"bench", "--skip-disk", "--expect", p.dir + "/none.json"}).exit_code, 2);
  std::filesystem::remove_all(p.dir);
}

}  // namespace
}  // namespace fulcrum::testing
