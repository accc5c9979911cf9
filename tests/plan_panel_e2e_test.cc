// The planning panel: real questions an ML engineer asks `fulcrum plan`, each checked against the
// property an experienced engineer expects of the answer (issue 12), on the shipped catalog
// through the real binary. Properties, not expected output: each would fail on a planner that
// ranks by raw speed, bills reservations by the hour, proposes hardware modes that do not exist
// or changes the batch silently.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

using nlohmann::json;

RunOptions NoUserOffers() {
  RunOptions o;
  static const std::string empty = MakeTempDir("panel-offers-d");
  o.env["FULCRUM_OFFERS_DIR"] = empty;
  return o;
}

json Plan(std::vector<std::string> args, int expected_exit = 0) {
  args.insert(args.begin(), "plan");
  args.push_back("--json");
  RunOutput r = RunFulcrum(args, NoUserOffers());
  EXPECT_EQ(r.exit_code, expected_exit) << r.err;
  if (r.out.empty()) return json::object();
  return json::parse(r.out);
}

std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

bool Warns(const json& c, const std::string& code) {
  return std::find(c["warnings"].begin(), c["warnings"].end(), code) != c["warnings"].end();
}

double Usd(const json& c) { return c["cost"]["expected_usd"].get<double>(); }
double P90Hours(const json& c) { return c["time"]["p90_hours"].get<double>(); }

double P90Usd(const json& c) { return c["cost"]["p90_usd"].get<double>(); }

// The balanced pick costs within 25 % of the cheapest candidate that meets the deadline and the
// budget, both at P90 (the cost the balanced objective ranks by: a row whose expected cost is low
// but whose GPU has no calibration rows or whose spot risk is extrapolated is not cheap at P90).
void ExpectBalancedNearCheapest(const std::vector<std::string>& question) {
  const json balanced = Plan(With(question, {"--top", "1"}));
  const json cheapest = Plan(With(question, {"--top", "100000", "--objective", "cheapest"}));
  ASSERT_FALSE(balanced["candidates"].empty());
  ASSERT_FALSE(cheapest["candidates"].empty());
  const json& pick = balanced["candidates"][0];
  EXPECT_TRUE(pick["meets_constraints"].get<bool>());
  const json* cheap = nullptr;
  for (const json& c : cheapest["candidates"]) {
    if (!c["meets_constraints"].get<bool>()) continue;
    if (cheap == nullptr || P90Usd(c) < P90Usd(*cheap)) cheap = &c;
  }
  ASSERT_NE(cheap, nullptr);
  EXPECT_LE(P90Usd(pick), 1.25 * P90Usd(*cheap))
      << pick["provider"] << " " << pick["instance_type"] << " x" << pick["nodes"] << " "
      << pick["pricing"] << " vs " << (*cheap)["provider"] << " " << (*cheap)["instance_type"];
}

const std::vector<std::string> kFinetune7b = {SourcePath("examples/llama-7b-finetune.yaml")};

// What an experienced engineer does with two candidates of about the same price: take the one
// whose numbers are better known. The balanced pick may be `less_known` (a GPU without step-time
// calibration rows, or spot capacity whose risk is extrapolated from V100 traces) only when
// every better-known candidate with no more nodes that meets the constraints costs more than
// 25 % above it at P90 (what the user must be ready to pay).
void ExpectNoLessKnownPickWithinAQuarter(const std::vector<std::string>& question,
                                         bool (*less_known)(const json&), const char* what) {
  const json d = Plan(With(question, {"--top", "400"}));
  ASSERT_FALSE(d["candidates"].empty());
  const json& pick = d["candidates"][0];
  if (!less_known(pick)) return;
  for (const json& c : d["candidates"]) {
    if (!c["meets_constraints"].get<bool>() || less_known(c)) continue;
    if (c["nodes"].get<int>() > pick["nodes"].get<int>()) continue;
    EXPECT_GT(P90Usd(c), 1.25 * P90Usd(pick))
        << "the pick is " << what << " (" << pick["provider"] << " " << pick["instance_type"] << " "
        << pick["pricing"] << ", P90 $" << P90Usd(pick) << ") though #" << c["rank"] << " "
        << c["provider"] << " " << c["instance_type"] << " " << c["pricing"] << " costs $"
        << P90Usd(c) << " at P90";
  }
}

bool Uncalibrated(const json& c) { return Warns(c, "uncalibrated-gpu"); }
bool Spot(const json& c) { return c["pricing"] == "spot"; }

// 1. Full fine-tune of a 7B model, 3-day deadline, $5,000: the balanced answer is not the fastest
//    multi-node spot row but one close to the cheapest that meets the deadline.
TEST(PlanPanelTest, Finetune7bBalancedPickCostsWithin25PercentOfTheCheapestFeasible) {
  ExpectBalancedNearCheapest(kFinetune7b);
  const json d = Plan(With(kFinetune7b, {"--top", "1"}));
  EXPECT_EQ(d["objective"], "balanced");
  EXPECT_LE(d["candidates"][0]["nodes"].get<int>(), 2);
}

// 1b. Ranking an expert would sign (issue 12): on the fine-tune, the LoRA and the open 7B
//     questions the balanced pick is neither an uncalibrated GPU nor a spot row while a
//     calibrated, on-demand candidate with no more nodes is within 25 % of its P90 cost — the
//     wider P90 of uncertain rows (estimator band, spot traces of other GPUs) decides, no
//     penalty per name.
TEST(PlanPanelTest, BalancedPickPrefersBetterKnownRowsAtAboutTheSamePrice) {
  for (const std::vector<std::string>& q : {kFinetune7b,
                                            {SourcePath("examples/llama-8b-lora.yaml")},
                                            {"--model", "llama-2-7b", "--tokens", "2B"}}) {
    ExpectNoLessKnownPickWithinAQuarter(q, Uncalibrated, "an uncalibrated GPU");
    ExpectNoLessKnownPickWithinAQuarter(q, Spot, "a spot row");
  }
}

// 1c. The fine-tune's balanced top 5 offers the answer an expert would sign — a single-node,
//     8-GPU, calibrated on-demand row finishing within half the deadline at P90 — and ranks it
//     above every row that compounds both uncertainties (an uncalibrated GPU on spot).
TEST(PlanPanelTest, Finetune7bTopFiveOffersACalibratedSingleNodeOnDemandRow) {
  const json d = Plan(With(kFinetune7b, {"--top", "5"}));
  ASSERT_EQ(d["candidates"].size(), 5u);
  int first_signed = 1 << 30, first_compounded = 1 << 30;
  for (const json& c : d["candidates"]) {
    const int rank = c["rank"].get<int>();
    if (c["nodes"] == 1 && c["gpu_count"] == 8 && c["pricing"] == "on_demand" && !Uncalibrated(c) &&
        P90Hours(c) <= 36.0) {
      first_signed = std::min(first_signed, rank);
    }
    if (Uncalibrated(c) && Spot(c)) first_compounded = std::min(first_compounded, rank);
  }
  EXPECT_LE(first_signed, 5);
  EXPECT_LT(first_signed, first_compounded);
}

// 2. "How should I train a 7B on 2B tokens?" with no deadline: not 512 GPUs for 17 minutes.
TEST(PlanPanelTest, NoDeadlineDoesNotPickTheWidestCluster) {
  const json d = Plan({"--model", "llama-2-7b", "--tokens", "2B", "--top", "3"});
  ASSERT_FALSE(d["candidates"].empty());
  for (const json& c : d["candidates"]) EXPECT_LE(c["gpu_count"].get<int>(), 64) << c["rank"];
  ExpectBalancedNearCheapest({"--model", "llama-2-7b", "--tokens", "2B"});
}

// 3. LoRA on an 8B model: one node.
TEST(PlanPanelTest, LoraOn8bRunsOnOneNode) {
  const json d = Plan({SourcePath("examples/llama-8b-lora.yaml"), "--top", "5"});
  ASSERT_FALSE(d["candidates"].empty());
  for (const json& c : d["candidates"]) EXPECT_EQ(c["nodes"], 1) << c["rank"];
}

// 4. 70B pre-training on 200B tokens in 30 days with reserved pricing allowed: meets the deadline;
//    no reserved row ranks above on-demand (the term is years, the job weeks).
TEST(PlanPanelTest, Pretrain70bNoReservedRowAboveOnDemand) {
  const json d = Plan({SourcePath("examples/llama-70b-pretrain.yaml"), "--top", "200"});
  ASSERT_FALSE(d["candidates"].empty());
  EXPECT_TRUE(d["candidates"][0]["meets_constraints"].get<bool>());
  int first_on_demand = 1 << 30, first_reserved = 1 << 30;
  for (const json& c : d["candidates"]) {
    const std::string pricing = c["pricing"];
    if (pricing == "on_demand") first_on_demand = std::min(first_on_demand, c["rank"].get<int>());
    if (pricing.rfind("reserved", 0) == 0) {
      first_reserved = std::min(first_reserved, c["rank"].get<int>());
      EXPECT_TRUE(Warns(c, "reserved-commitment")) << c["rank"];
    }
  }
  EXPECT_LT(first_on_demand, first_reserved);
}

// 4b. 70B pre-training where most offers publish no inter-node network and the spec assumes
//     400 Gbit/s per node: an expert does not rent 128 small VMs on a network nobody publishes.
//     The assumption plans the mean; the P90 (deadline, balanced cost) is planned at the lowest
//     published per-GPU figure, so an optimistic assumption does not buy the top rows.
TEST(PlanPanelTest, Pretrain70bTopRowsDoNotRestOnAnAssumedNetwork) {
  const json d = Plan({SourcePath("examples/llama-70b-pretrain.yaml"), "--top", "3"});
  ASSERT_EQ(d["candidates"].size(), 3u);
  for (const json& c : d["candidates"]) {
    EXPECT_TRUE(c["meets_constraints"].get<bool>()) << c["rank"];
    EXPECT_FALSE(c["nodes"].get<int>() > 1 && Warns(c, "network-bandwidth-assumed"))
        << c["rank"] << " " << c["provider"] << " " << c["instance_type"] << " x" << c["nodes"];
  }
}

// 4c. The same layout on an assumed network has the same P90 whatever the assumption: raising
//     --assume-network-gbps from 50 to 3200 may make the mean faster, never the P90.
TEST(PlanPanelTest, AssumedNetworkDoesNotShortenTheP90) {
  auto rows = [](const std::string& gbps) {
    const json d =
        Plan({SourcePath("examples/llama-70b-pretrain.yaml"), "--providers", "hyperbolic,lambda",
              "--pricing", "on_demand", "--assume-network-gbps", gbps, "--top", "400"});
    std::map<std::string, json> out;
    for (const json& c : d["candidates"]) {
      if (c["nodes"].get<int>() < 2 || !Warns(c, "network-bandwidth-assumed")) continue;
      out[c["provider"].get<std::string>() + " " + c["instance_type"].get<std::string>() + " x" +
          std::to_string(c["nodes"].get<int>()) + " " + c["parallel"].dump()] = c;
    }
    return out;
  };
  const std::map<std::string, json> slow = rows("50"), fast = rows("3200");
  int compared = 0;
  for (const auto& [key, f] : fast) {
    auto it = slow.find(key);
    if (it == slow.end()) continue;
    ++compared;
    EXPECT_LE(f["time"]["total_hours"].get<double>(),
              it->second["time"]["total_hours"].get<double>() * 1.001)
        << key;
    EXPECT_GE(P90Hours(f), 0.98 * P90Hours(it->second)) << key;
  }
  EXPECT_GT(compared, 5);
}

// 4d. The same 256 H100s as 256 1-GPU VMs or 128 2-GPU VMs: more hosts, NICs and switch ports
//     interrupt the run more often per hour (stability counts node count, not GPUs alone).
TEST(PlanPanelTest, SameGpusInMoreNodesAreInterruptedMoreOften) {
  const json d = Plan({SourcePath("examples/llama-70b-pretrain.yaml"), "--providers", "hyperbolic",
                       "--pricing", "on_demand", "--top", "400"});
  std::map<int, double> per_hour_by_nodes;  // 256-GPU rows: interruptions per hour by nodes
  for (const json& c : d["candidates"]) {
    if (c["nodes"].get<int>() * c["gpus_per_node"].get<int>() != 256) continue;
    per_hour_by_nodes[c["nodes"].get<int>()] =
        c["time"]["expected_interruptions"].get<double>() / c["time"]["total_hours"].get<double>();
  }
  ASSERT_EQ(per_hour_by_nodes.count(128), 1u);
  ASSERT_EQ(per_hour_by_nodes.count(256), 1u);
  EXPECT_GT(per_hour_by_nodes[256], 1.2 * per_hour_by_nodes[128]);
}

// 4e. 70B pre-training on spot only in 30 days: nothing meets the deadline at P90; the rows
//     shown first are the nearest misses (an expert asks "what comes closest?"), not the
//     cheapest run that takes five times the deadline.
TEST(PlanPanelTest, WhenNothingMeetsTheDeadlineTheNearestMissComesFirst) {
  const json d =
      Plan({SourcePath("examples/llama-70b-pretrain.yaml"), "--pricing", "spot", "--top", "400"});
  ASSERT_FALSE(d["candidates"].empty());
  double best = 1e300;
  for (const json& c : d["candidates"]) {
    EXPECT_FALSE(c["meets_constraints"].get<bool>()) << c["rank"];
    best = std::min(best, P90Hours(c));
  }
  const json& first = d["candidates"][0];
  EXPECT_LE(P90Hours(first), 30 * 24 * 1.10) << first["provider"] << " x" << first["nodes"];
  EXPECT_DOUBLE_EQ(P90Hours(first), best);
}

// 5. ResNet-50 on ImageNet, 90 epochs in 2 days: plain data parallel, within 25 % of the cheapest.
TEST(PlanPanelTest, ResNet50IsPlainDataParallel) {
  const std::vector<std::string> q = {SourcePath("examples/resnet50.yaml")};
  const json d = Plan(With(q, {"--top", "10"}));
  ASSERT_FALSE(d["candidates"].empty());
  for (const json& c : d["candidates"]) {
    EXPECT_EQ(c["parallel"]["tp"], 1);
    EXPECT_EQ(c["parallel"]["pp"], 1);
  }
  ExpectBalancedNearCheapest(q);
}

// 6. BERT-large pre-training (340 M parameters): no model parallelism, one node.
TEST(PlanPanelTest, BertLargeNeedsNoModelParallelism) {
  const json d = Plan({"--model", "bert-large", "--tokens", "5B", "--seq-len", "512", "--deadline",
                       "7d", "--top", "5"});
  ASSERT_FALSE(d["candidates"].empty());
  for (const json& c : d["candidates"]) {
    EXPECT_EQ(c["parallel"]["tp"], 1) << c["rank"];
    EXPECT_EQ(c["parallel"]["pp"], 1) << c["rank"];
  }
  EXPECT_EQ(d["candidates"][0]["nodes"], 1);
}

// 6b. BERT-large on 20B tokens in 2 days, batch left to fulcrum: still no model parallelism in
//     the top 10. A 3-GPU node does not divide the default 2048-sequence batch; a default batch
//     is no user contract, so rounding it up must not lose to a pipeline over 3 GPUs of a 335 M
//     model (what nobody would run).
TEST(PlanPanelTest, BertLargeDefaultBatchIsNotKeptByPipelining) {
  const json d = Plan({"--model", "bert-large", "--tokens", "20B", "--seq-len", "512", "--deadline",
                       "2d", "--top", "10"});
  ASSERT_FALSE(d["candidates"].empty());
  for (const json& c : d["candidates"]) {
    EXPECT_EQ(c["parallel"]["tp"], 1) << c["rank"] << " " << c["instance_type"];
    EXPECT_EQ(c["parallel"]["pp"], 1) << c["rank"] << " " << c["instance_type"];
    EXPECT_FALSE(Warns(c, "global-batch-changed")) << c["rank"];  // not the user's batch
  }
  // With the batch given, it is kept exactly or flagged.
  const json given = Plan({"--model", "bert-large", "--tokens", "20B", "--seq-len", "512",
                           "--deadline", "2d", "--global-batch", "2048", "--top", "10"});
  for (const json& c : given["candidates"]) {
    EXPECT_TRUE(c["parallel"]["global_batch"] == 2048 || Warns(c, "global-batch-changed"))
        << c["rank"];
  }
}

// 7. A 13B full fine-tune on 40 GB cards: every row shards (ZeRO / tp / pp) and keeps headroom.
TEST(PlanPanelTest, Model13bOn40GbCardsIsAlwaysSharded) {
  const json d = Plan({"--model", "llama-2-13b", "--tokens", "1B", "--gpus", "A100-SXM4-40GB",
                       "--deadline", "7d", "--top", "50"});
  ASSERT_FALSE(d["candidates"].empty());
  for (const json& c : d["candidates"]) {
    EXPECT_EQ(c["gpu"], "A100-SXM4-40GB");
    const json& p = c["parallel"];
    EXPECT_TRUE(p["tp"].get<int>() > 1 || p["pp"].get<int>() > 1 || p["zero"].get<int>() >= 1)
        << c["rank"];
    EXPECT_GE(c["memory"]["headroom_fraction"].get<double>(), 0.10);
    EXPECT_FALSE(Warns(c, "large-model-small-gpu-unsharded"));
  }
}

// 8. Tight deadline: rows that meet it come first and really finish within it at P90; the
//    fastest objective's pick is no slower than the balanced one's.
TEST(PlanPanelTest, TightDeadlineRowsFinishInTimeAndComeFirst) {
  const std::vector<std::string> q = {"--model",   "llama-2-7b", "--tokens",   "20B",
                                      "--seq-len", "4096",       "--deadline", "12h"};
  const json d = Plan(With(q, {"--top", "100"}));
  ASSERT_FALSE(d["candidates"].empty());
  bool seen_infeasible = false;
  for (const json& c : d["candidates"]) {
    if (c["meets_constraints"].get<bool>()) {
      EXPECT_FALSE(seen_infeasible) << "feasible row after an infeasible one: " << c["rank"];
      EXPECT_LE(P90Hours(c), 12.0 + 1e-6);
    } else {
      seen_infeasible = true;
    }
  }
  const json fastest = Plan(With(q, {"--top", "1", "--objective", "fastest"}));
  EXPECT_LE(P90Hours(fastest["candidates"][0]), P90Hours(d["candidates"][0]) + 1e-9);
}

// 8b. One P90: every row's P90 carries the estimator's own band (its step_seconds_p90), on top of
//     the interruptions, and the deadline check uses that P90. With r = step P90 / step and the
//     10-minute start-up of the cost model (plan/cost.h), P90 - start-up >= r x (mean - start-up).
TEST(PlanPanelTest, TheOneP90CarriesTheEstimatorBand) {
  const json d = Plan({"--model", "llama-2-7b", "--tokens", "20B", "--seq-len", "4096",
                       "--deadline", "12h", "--top", "100"});
  ASSERT_FALSE(d["candidates"].empty());
  const double startup_hours = 10.0 / 60;
  int widened = 0;
  for (const json& c : d["candidates"]) {
    const json& t = c["time"];
    const double r = t["step_seconds_p90"].get<double>() / t["step_seconds"].get<double>();
    const double mean = t["total_hours"].get<double>();
    EXPECT_GE(P90Hours(c) + 2e-3, std::max(1.0, r) * (mean - startup_hours) + startup_hours)
        << c["rank"];
    if (r > 1.01) ++widened;
    if (c["meets_constraints"].get<bool>()) {
      EXPECT_LE(P90Hours(c), 12.0 + 1e-6);
    }
  }
  EXPECT_GT(widened, 0);
}

// 9. Loose deadline (30 days for a job of hours): speed is worth little, cost decides.
TEST(PlanPanelTest, LooseDeadlineCostDecides) {
  ExpectBalancedNearCheapest(
      {"--model", "llama-2-7b", "--tokens", "2B", "--seq-len", "4096", "--deadline", "30d"});
}

// 10. Budget-bound: every row ranked as feasible stays within the budget.
TEST(PlanPanelTest, BudgetBoundRowsStayWithinTheBudget) {
  const json d = Plan({"--model", "llama-2-7b", "--tokens", "20B", "--seq-len", "4096",
                       "--budget-usd", "1500", "--top", "100"});
  ASSERT_FALSE(d["candidates"].empty());
  EXPECT_TRUE(d["candidates"][0]["meets_constraints"].get<bool>());
  for (const json& c : d["candidates"]) {
    if (c["meets_constraints"].get<bool>()) {
      EXPECT_LE(Usd(c), 1500.0);
    } else {
      EXPECT_TRUE(Warns(c, "budget-exceeded") || Warns(c, "deadline-missed-p90"));
    }
  }
}

// 11. Spot only: every row is spot, multi-node spot rows carry spot-capacity-risk, and no spot row
//     is faster than its on-demand twin.
TEST(PlanPanelTest, SpotOnlyRowsAreSpotAndNeverFasterThanOnDemand) {
  const std::vector<std::string> q = {"--model", "llama-2-7b", "--tokens",
                                      "5B",      "--deadline", "3d",
                                      "--top",   "300",        "--simulate-all-spot"};
  const json spot = Plan(With(q, {"--pricing", "spot"}));
  ASSERT_FALSE(spot["candidates"].empty());
  int risky = 0;
  for (const json& c : spot["candidates"]) {
    EXPECT_EQ(c["pricing"], "spot");
    EXPECT_FALSE(Warns(c, "spot-not-risk-adjusted")) << c["rank"];
    if (P90Hours(c) > c["time"]["total_hours"].get<double>() * 1.01) ++risky;
    if (c["nodes"].get<int>() > 1) {
      EXPECT_TRUE(Warns(c, "spot-capacity-risk")) << c["rank"];
    }
  }
  EXPECT_GT(risky, 0) << "spot P90 should exceed the mean (preemptions are not rare)";
  const json both = Plan(With(q, {"--pricing", "on_demand,spot"}));
  std::map<std::tuple<std::string, std::string, std::string, int>, double> on_demand_hours;
  for (const json& c : both["candidates"]) {
    if (c["pricing"] != "on_demand") continue;
    on_demand_hours[{c["provider"], c["instance_type"], c["region"], c["nodes"]}] =
        c["time"]["total_hours"].get<double>();
  }
  int twins = 0;
  for (const json& c : both["candidates"]) {
    if (c["pricing"] != "spot") continue;
    auto it = on_demand_hours.find({c["provider"], c["instance_type"], c["region"], c["nodes"]});
    if (it == on_demand_hours.end()) continue;
    ++twins;
    EXPECT_GE(c["time"]["total_hours"].get<double>(), it->second - 1e-6) << c["instance_type"];
  }
  EXPECT_GT(twins, 0);
}

// 12. No V100 with bf16 (V100 has no bf16 units): skipped, or fp16 with a warning when allowed.
TEST(PlanPanelTest, NoV100WithBf16) {
  const std::vector<std::string> q = {"--model", "llama-2-7b", "--tokens",
                                      "1B",      "--gpus",     "V100-SXM2-32GB,V100-SXM2-16GB,H100",
                                      "--top",   "500"};
  const json d = Plan(q);
  for (const json& c : d["candidates"]) {
    EXPECT_EQ(std::string(c["gpu"]).rfind("V100", 0), std::string::npos) << c["rank"];
    EXPECT_EQ(c["parallel"]["precision"], "bf16");
  }
  const json fallback = Plan(With(q, {"--allow-precision-fallback"}));
  int v100 = 0;
  for (const json& c : fallback["candidates"]) {
    if (std::string(c["gpu"]).rfind("V100", 0) != 0) continue;
    ++v100;
    EXPECT_EQ(c["parallel"]["precision"], "fp16");
    EXPECT_TRUE(Warns(c, "precision-fallback"));
  }
  EXPECT_GT(v100, 0);
}

// 13. Reserved pricing for a short job: the term's full price, below on-demand in the ranking;
//     --reserved-owned makes it the (cheaper) marginal cost.
TEST(PlanPanelTest, ReservedForAShortJobCostsTheTerm) {
  const std::vector<std::string> q = {
      "--model",    "llama-2-7b", "--tokens", "1B", "--pricing", "on_demand,reserved_3y",
      "--max-gpus", "8",          "--top",    "500"};
  const json d = Plan(q);
  ASSERT_FALSE(d["candidates"].empty());
  EXPECT_EQ(d["candidates"][0]["pricing"], "on_demand");
  int reserved = 0;
  for (const json& c : d["candidates"]) {
    if (c["pricing"] != "reserved_3y") continue;
    ++reserved;
    // 3 years x 8760 h at the effective hourly price.
    EXPECT_NEAR(Usd(c), c["cost"]["usd_per_hour"].get<double>() * 3 * 8760, 0.01 * Usd(c));
    EXPECT_TRUE(Warns(c, "reserved-commitment"));
  }
  ASSERT_GT(reserved, 0);
  const json owned = Plan(With(q, {"--reserved-owned"}));
  for (const json& c : owned["candidates"]) {
    if (c["pricing"] == "reserved_3y") {
      EXPECT_LT(Usd(c), 1000.0);
      EXPECT_FALSE(Warns(c, "reserved-commitment"));
    }
  }
}

// 14. Frameworks get only the sharding they have: no ZeRO-2/3 under Megatron-LM; --framework fsdp
//     gives FSDP strategies only, tensor parallel (as torchtitan composes it) within a node.
TEST(PlanPanelTest, FrameworksOnlyGetTheirSharding) {
  const json d = Plan({SourcePath("examples/llama-70b-pretrain.yaml"), "--top", "200"});
  for (const json& c : d["candidates"]) {
    if (c["parallel"]["framework"] == "megatron") {
      EXPECT_LE(c["parallel"]["zero"].get<int>(), 1);
    }
  }
  const json fsdp = Plan(With(kFinetune7b, {"--framework", "fsdp", "--top", "100"}));
  ASSERT_FALSE(fsdp["candidates"].empty());
  for (const json& c : fsdp["candidates"]) {
    EXPECT_EQ(c["parallel"]["framework"], "fsdp");
    EXPECT_EQ(c["gpus_per_node"].get<int>() % c["parallel"]["tp"].get<int>(), 0);
    EXPECT_NE(c["parallel"]["zero"], 1);
  }
}

// 15. The global batch stays what the spec says, or the row says it changed; --strict-batch
//     drops such rows; --max-nodes caps nodes.
TEST(PlanPanelTest, GlobalBatchStaysOrIsFlagged) {
  const json d = Plan(With(kFinetune7b, {"--top", "500"}));
  for (const json& c : d["candidates"]) {
    if (c["parallel"]["global_batch"] != 128) {
      EXPECT_TRUE(Warns(c, "global-batch-changed")) << c["rank"];
      EXPECT_EQ(c["parallel"]["spec_global_batch"], 128);
    }
  }
  const json strict =
      Plan(With(kFinetune7b, {"--top", "500", "--strict-batch", "--max-nodes", "2"}));
  ASSERT_FALSE(strict["candidates"].empty());
  for (const json& c : strict["candidates"]) {
    EXPECT_EQ(c["parallel"]["global_batch"], 128);
    EXPECT_LE(c["nodes"].get<int>(), 2);
  }
}

// 17. Hidden costs: disks, checkpoints kept after the run and egress join the total when the spec
//     gives them, priced per provider; providers without a sourced price are named.
TEST(PlanPanelTest, StorageAndEgressJoinTheTotal) {
  const std::string dir = MakeTempDir("panel-storage");
  const std::string spec = dir + "/job.yaml";
  std::ofstream(spec) << "model: llama-2-7b\ntokens: 1B\nstorage: {disk_gb: 2000, checkpoint_gb: "
                         "500, keep_days: 30}\negress_gb: 500\n";
  const json with = Plan({spec, "--providers", "aws", "--pricing", "on_demand", "--top", "1"});
  ASSERT_FALSE(with["candidates"].empty());
  const json& c = with["candidates"][0];
  const json& b = c["cost"]["breakdown"];
  EXPECT_GT(b["storage_usd"].get<double>(), 0);
  EXPECT_GT(b["egress_usd"].get<double>(), 0);
  double sum = 0;
  for (const char* k : {"compute_usd", "storage_usd", "egress_usd", "failures_usd",
                        "checkpoint_usd", "commitment_usd"}) {
    sum += b[k].get<double>();
  }
  EXPECT_NEAR(sum, Usd(c), 0.05);
  const json flags = Plan({"--model", "llama-2-7b", "--tokens", "1B", "--egress-gb", "500",
                           "--disk-gb", "100", "--top", "500"});
  bool unpriced_note = false;
  for (const json& n : flags["notes"]) {
    unpriced_note = unpriced_note ||
                    std::string(n).find("no sourced storage/egress price") != std::string::npos;
  }
  EXPECT_TRUE(unpriced_note);
  std::filesystem::remove_all(dir);
}

// 18. B200 wins many plans yet the step-time model has no measured Blackwell rows: flagged, with
//     "uncalibrated" derived from the calibration data (here a catalog copy whose data has
//     Hopper rows only).
TEST(PlanPanelTest, UncalibratedGpusAreFlaggedFromTheData) {
  const std::string root = MakeTempDir("panel-calib");
  std::filesystem::copy(SourcePath("catalog"), root + "/catalog",
                        std::filesystem::copy_options::recursive);
  std::filesystem::create_directories(root + "/data/calibration");
  std::ofstream(root + "/data/calibration/measured.csv")
      << "id,gpu,measured_value\nr1,H100-80GB,1\n";
  RunOutput r = RunFulcrum({"--catalog", root + "/catalog", "plan", "--model", "llama-2-7b",
                            "--tokens", "1B", "--gpus", "H100,B200", "--top", "200", "--json"},
                           NoUserOffers());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int b200 = 0, h100 = 0;
  const json d = json::parse(r.out);
  for (const json& c : d["candidates"]) {
    if (c["gpu"] == "B200") {
      ++b200;
      EXPECT_TRUE(Warns(c, "uncalibrated-gpu"));
    } else {
      ++h100;
      EXPECT_FALSE(Warns(c, "uncalibrated-gpu")) << c["gpu"];
    }
  }
  EXPECT_GT(b200, 0);
  EXPECT_GT(h100, 0);
  std::filesystem::remove_all(root);
}

// 16. Impossible inputs are exit 2 with the reason.
TEST(PlanPanelTest, ImpossibleInputsAreRefused) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--budget-usd", "-5"},
                                               {"--max-nodes", "0"},
                                               {"--objective", "quickest"},
                                               {"--framework", "jax"},
                                               {"--tokens", "1e19"},
                                               {"--tokens", "1e400"},
                                               {"--seq-len", "100000"}}) {
    std::vector<std::string> argv = {"plan", "--model", "llama-2-7b"};
    if (args[0] != "--tokens") argv.insert(argv.end(), {"--tokens", "1B"});
    argv.insert(argv.end(), args.begin(), args.end());
    RunOutput r = RunFulcrum(argv, NoUserOffers());
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.out;
    const std::string field = args[1] == "1e400"       ? "1e400"
                              : args[0] == "--tokens"  ? "1e15"
                              : args[0] == "--seq-len" ? "context of 4096"
                                                       : args[0].substr(2);
    EXPECT_NE(r.err.find(field), std::string::npos) << r.err;
  }
  // A context-extension run is allowed when asked for.
  RunOutput r = RunFulcrum({"plan", "--model", "llama-2-7b", "--tokens", "1B", "--seq-len", "8192",
                            "--allow-long-context", "--top", "1"},
                           NoUserOffers());
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace fulcrum::testing
