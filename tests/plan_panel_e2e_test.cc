// The planning panel: real questions an ML engineer asks `fulcrum plan`, each checked against the
// property an experienced engineer expects of the answer (issue 12), on the shipped catalog
// through the real binary. Properties, not expected output: each would fail on a planner that
// ranks by raw speed, bills reservations by the hour, proposes hardware modes that do not exist
// or changes the batch silently.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/plan_panel.h"
#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

using nlohmann::json;

double Usd(const json& c) { return c["cost"]["expected_usd"].get<double>(); }
double P90Hours(const json& c) { return c["time"]["p90_hours"].get<double>(); }

double P90Usd(const json& c) { return c["cost"]["p90_usd"].get<double>(); }

// The balanced pick costs within 30 % of the cheapest confirmed candidate with no more nodes and
// the same pricing (on-demand or spot) that meets the deadline and the budget, both at P90 (the
// cost the balanced objective ranks by: a row whose expected cost is low but whose GPU has no
// calibration rows or whose spot risk is extrapolated is not cheap at P90).
void ExpectBalancedNearCheapest(const std::vector<std::string>& question) {
  const json balanced = Plan(With(question, {"--top", "1"}));
  const json cheapest = Plan(With(question, {"--top", "100000", "--objective", "cheapest"}));
  ASSERT_FALSE(balanced["candidates"].empty());
  ASSERT_FALSE(cheapest["candidates"].empty());
  const json& pick = balanced["candidates"][0];
  EXPECT_TRUE(pick["meets_constraints"].get<bool>());
  // The cheapest with a confirmed price and interconnect (JSON unconfirmed empty; docs/RANKING.md):
  // a marketplace snapshot or a price no provider page confirms is not what the pick is held to,
  // unless nothing else meets the constraints.
  const json* cheap = nullptr;
  for (bool confirmed_only : {true, false}) {
    for (const json& c : cheapest["candidates"]) {
      if (!c["meets_constraints"].get<bool>()) continue;
      if (confirmed_only && !c["unconfirmed"].empty()) continue;
      // A gang of more nodes than the pick (every one held at once, spot ones preempted
      // independently) is not the price a smaller pick is held to.
      if (c["nodes"].get<int>() > pick["nodes"].get<int>()) continue;
      // An on-demand pick is held to on-demand prices, a spot pick to spot ones: a spot row's
      // P90 carries its preemptions, but renting on-demand buys a run no one takes away, which the
      // balanced score's stability counts and a price comparison cannot.
      if (c["pricing"] != pick["pricing"]) continue;
      if (cheap == nullptr || P90Usd(c) < P90Usd(*cheap)) cheap = &c;
    }
    if (cheap != nullptr) break;
  }
  ASSERT_NE(cheap, nullptr);
  // 30 %, 25 % until issue 31's refit on TF1's optimizer graph (memory-bandwidth efficiency 0.80
  // -> 0.84), after which the 7B / 2B-token question's pick, 8x A100 PCIe at 17 h, costs 25.05 %
  // above the slowest feasible 8-GPU box (8x RTX A6000, 40 h) at P90: how much the balanced score
  // pays for speed without a deadline is its policy (docs/RANKING.md), which this bounds, not pins.
  EXPECT_LE(P90Usd(pick), 1.30 * P90Usd(*cheap))
      << pick["provider"] << " " << pick["instance_type"] << " x" << pick["nodes"] << " "
      << pick["pricing"] << " vs " << (*cheap)["provider"] << " " << (*cheap)["instance_type"];
}

const std::vector<std::string> kFinetune7b = {SourcePath("examples/llama-7b-finetune.yaml")};

// What an experienced engineer does with two candidates of about the same price: take the one
// whose numbers are better known. The balanced pick may be `less_known` (a GPU without step-time
// calibration rows, or spot capacity whose risk is extrapolated from V100 traces) only when
// every better-known candidate with no more nodes that meets the constraints costs more than
// 25 % above it at P90 (what the user must be ready to pay). A row whose price or interconnect
// the catalog cannot confirm (JSON unconfirmed; docs/RANKING.md) is not better known: its cost is
// the uncertain figure, so a confirmed pick is not held to it (as in ExpectBalancedNearCheapest).
void ExpectNoLessKnownPickWithinAQuarter(const std::vector<std::string>& question,
                                         bool (*less_known)(const json&), const char* what) {
  const json d = Plan(With(question, {"--top", "400"}));
  ASSERT_FALSE(d["candidates"].empty());
  const json& pick = d["candidates"][0];
  if (!less_known(pick)) return;
  for (const json& c : d["candidates"]) {
    if (!c["meets_constraints"].get<bool>() || less_known(c)) continue;
    if (pick["unconfirmed"].empty() && !c["unconfirmed"].empty()) continue;
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

// 4e. 70B pre-training on spot (with the on-demand fallback: spot alone waits out every gang
//     preemption and comes nowhere near) in 30 days: nothing meets the deadline at P90; the rows
//     shown first are the near misses (an expert asks "what comes closest?"), not the cheapest
//     run that takes five times the deadline; and among misses of about the same size (within
//     5 % of the nearest) the cheaper at P90 comes first: 30.1 days for $968k is not the answer
//     when 31.2 days cost $135k. The table says how the misses are ordered.
TEST(PlanPanelTest, WhenNothingMeetsTheDeadlineTheNearestMissComesFirst) {
  // Under Megatron (a 70B pre-train's usual framework; under FSDP one B200 row just makes it).
  const std::vector<std::string> q = {SourcePath("examples/llama-70b-pretrain.yaml"), "--pricing",
                                      "spot_with_fallback", "--framework", "megatron"};
  const json d = Plan(With(q, {"--top", "400"}));
  ASSERT_FALSE(d["candidates"].empty());
  double nearest = 1e300;
  for (const json& c : d["candidates"]) {
    EXPECT_FALSE(c["meets_constraints"].get<bool>()) << c["rank"];
    nearest = std::min(nearest, c["miss_factor"].get<double>());
  }
  EXPECT_NEAR(d["reference"]["nearest_miss_factor"].get<double>(), nearest, 1e-3);
  const double tolerance = d["reference"]["near_miss_tolerance"].get<double>();
  EXPECT_LE(tolerance, 0.10);
  const json& first = d["candidates"][0];
  // The row shown first is the nearest miss (its miss factor is the nearest, within the
  // near-miss tolerance); how near it is belongs to the estimate (31.2 days before the GEMM
  // traffic refit of issue 31, 33.3 days after it, 34.5 days at P90 once the whole MPT benchmark
  // table widened the mpt band's P90 from 1.12 to 1.16), so the bound leaves room for that.
  EXPECT_LE(first["miss_factor"].get<double>(), nearest * (1 + tolerance)) << first["rank"];
  EXPECT_LE(P90Hours(first), 30 * 24 * 1.2) << first["provider"] << " x" << first["nodes"];
  EXPECT_TRUE(first["near_miss"].get<bool>());
  const json* prev = nullptr;
  int near_rows = 0;
  for (const json& c : d["candidates"]) {
    const double miss = c["miss_factor"].get<double>();
    const bool near = c["near_miss"].get<bool>();
    // The JSON rounds miss_factor to 4 decimals: rows that close to the limit may fall either way.
    const double limit = nearest * (1 + tolerance);
    if (std::abs(miss - limit) > 1e-3) {
      EXPECT_EQ(near, miss <= limit) << c["rank"];
    }
    near_rows += near;
    if (prev != nullptr) {
      const bool prev_near = (*prev)["near_miss"].get<bool>();
      EXPECT_TRUE(prev_near || !near) << "near miss #" << c["rank"] << " after a farther one";
      if (prev_near && near) {
        EXPECT_LE(P90Usd(*prev), P90Usd(c)) << "#" << (*prev)["rank"] << " before #" << c["rank"];
      }
      if (!prev_near && !near) {
        EXPECT_LE((*prev)["miss_factor"].get<double>(), miss) << c["rank"];
      }
    }
    prev = &c;
  }
  EXPECT_GT(near_rows, 1);
  RunOutput table = RunFulcrum(With({"plan"}, With(q, {"--top", "3"})), NoUserOffers());
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("within 5 % of the nearest by P90 cost"), std::string::npos)
      << table.out;
  // Nothing is feasible: the cost reference is not called the cheapest feasible one.
  EXPECT_EQ(table.out.find("cheapest feasible"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("cheapest (none meets the constraints) P90"), std::string::npos)
      << table.out;
}

// 5. ResNet-50 on ImageNet, 90 epochs in 2 days: plain data parallel, within 30 % of the cheapest.
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

// R0. A LoRA layout is labelled with a framework that runs LoRA in that layout: Megatron-LM
//      has no LoRA, so tp/pp/cp/ep LoRA rows are NeMo Megatron-Bridge (Megatron-Core PEFT),
//      never "megatron"; data-parallel LoRA is HF PEFT on fsdp/deepspeed/hf. QLoRA (a
//      bitsandbytes 4-bit base) is data parallel only, and --framework megatron is refused for
//      it with exit 2.
TEST(PlanPanelTest, LoraLayoutsNameAFrameworkThatRunsThem) {
  const json d =
      Plan({"--model", "llama-2-70b", "--method", "lora", "--tokens", "1B", "--top", "400"});
  ASSERT_FALSE(d["candidates"].empty());
  int bridge = 0;
  for (const json& c : d["candidates"]) {
    const json& p = c["parallel"];
    const std::string framework = p["framework"];
    EXPECT_NE(framework, "megatron") << c["rank"];
    if (p["tp"].get<int>() > 1 || p["pp"].get<int>() > 1) {
      EXPECT_EQ(framework, "megatron-bridge") << c["rank"];
      ++bridge;
    } else {
      EXPECT_TRUE(framework == "fsdp" || framework == "deepspeed" || framework == "hf" ||
                  framework == "megatron-bridge")
          << c["rank"] << " " << framework;
    }
  }
  EXPECT_GT(bridge, 0);
  const json q =
      Plan({"--model", "llama-2-70b", "--method", "qlora", "--tokens", "1B", "--top", "400"});
  ASSERT_FALSE(q["candidates"].empty());
  for (const json& c : q["candidates"]) {
    const json& p = c["parallel"];
    EXPECT_EQ(p["tp"], 1) << c["rank"];
    EXPECT_EQ(p["pp"], 1) << c["rank"];
    EXPECT_EQ(p["cp"], 1) << c["rank"];
    EXPECT_NE(p["framework"], "megatron") << c["rank"];
  }
  RunOutput refused = RunFulcrum({"plan", "--model", "llama-2-70b", "--method", "qlora", "--tokens",
                                  "1B", "--framework", "megatron"},
                                 NoUserOffers());
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("megatron has no QLoRA"), std::string::npos) << refused.err;
}

// R3. 405B pre-training on 64+ nodes over GCP A2's 100 Gbit/s Ethernet: Llama 3 405B has 126
//     layers, which no power of two divides, yet 64, 128 and 256 nodes are the sizes an expert
//     rents. Each is offered, pipelined with uneven stages (one layer less on the first and last,
//     as Llama 3 405B's pp16, arXiv 2407.21783 Sec. 3.3.2; the JSON gives the stage sizes
//     Megatron-LM's --decoder-first/last-pipeline-num-layers need), tensor parallel only within
//     a node, and no ZeRO-3 over the slow network.
TEST(PlanPanelTest, Pretrain405bOnManyNodesOfASlowNetworkIsPipelined) {
  const json d = Plan({"--model", "llama-3-405b", "--tokens", "100B", "--seq-len", "8192",
                       "--global-batch", "2048", "--max-gpus", "4096", "--providers", "gcp",
                       "--gpus", "A100-SXM4-80GB", "--pricing", "on_demand", "--top", "100"});
  std::set<int> nodes;
  for (const json& c : d["candidates"]) {
    const json& p = c["parallel"];
    nodes.insert(c["nodes"].get<int>());
    EXPECT_LE(p["tp"].get<int>(), c["gpus_per_node"].get<int>()) << c["rank"];
    if (c["nodes"].get<int>() > 1) {
      EXPECT_LE(p["zero"].get<int>(), 1) << c["rank"];
    }
    const int pp = p["pp"].get<int>();
    if (126 % pp != 0) {
      ASSERT_TRUE(p.contains("stage_layers")) << c["rank"];
      const json& s = p["stage_layers"];
      const int first = s["first"], middle = s["middle"], last = s["last"];
      EXPECT_EQ(first, 126 / pp) << c["rank"];
      EXPECT_EQ(last, first) << c["rank"];
      EXPECT_LE(middle - first, 1) << c["rank"];
    } else {
      EXPECT_FALSE(p.contains("stage_layers")) << c["rank"];
    }
  }
  for (int n : {64, 128, 256}) EXPECT_EQ(nodes.count(n), 1u) << n << " nodes not offered";
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
  for (const char* k : {"compute_usd", "storage_usd", "egress_usd", "failures_usd", "restarts_usd",
                        "checkpoint_usd", "commitment_usd"}) {
    sum += b[k].get<double>();
  }
  EXPECT_NEAR(sum, Usd(c), 0.05);
  const json flags = Plan({"--model", "llama-2-7b", "--tokens", "1B", "--egress-gb", "500",
                           "--disk-gb", "100", "--top", "500"});
  bool unpriced_note = false;
  for (const json& n : flags["notes"]) {
    unpriced_note =
        unpriced_note || std::string(n).find("storage not priced for ") != std::string::npos;
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

// --- Ten more questions (review of stop 22), each with what an experienced engineer expects --

bool Sharded(const json& c) {
  const json& p = c["parallel"];
  return p["tp"].get<int>() > 1 || p["pp"].get<int>() > 1 ||
         (p["zero"].get<int>() >= 1 && p["dp"].get<int>() > 1);
}

// R1. QLoRA of a 70B on one 80 GB card (the QLoRA paper's recipe, arXiv 2305.14314): it fits one
//     GPU unsharded with the 10 % headroom, as HF PEFT runs it (no Megatron), and the 4-bit base
//     (about half of the card) is not flagged as a large model on a small GPU.
TEST(PlanPanelTest, Qlora70bRunsOnOneEightyGigabyteCard) {
  const json d = Plan({"--model", "llama-2-70b", "--method", "qlora", "--tokens", "50M", "--gpus",
                       "H100-SXM5-80GB,A100-SXM4-80GB,H100-PCIe-80GB,A100-PCIe-80GB", "--max-gpus",
                       "1", "--top", "50"});
  ASSERT_FALSE(d["candidates"].empty());
  for (const json& c : d["candidates"]) {
    EXPECT_EQ(c["gpu_count"], 1) << c["rank"];
    EXPECT_EQ(c["parallel"]["framework"], "hf") << c["rank"];
    EXPECT_GE(c["memory"]["headroom_fraction"].get<double>(), 0.10) << c["rank"];
    EXPECT_FALSE(Warns(c, "large-model-small-gpu-unsharded")) << c["rank"];
    const json& m = c["memory"];
    EXPECT_LT(m["weights_bytes"].get<double>(), 0.6 * m["capacity_bytes"].get<double>());
  }
}

// R2. A full fine-tune of an 8B on consumer and PCIe cards: 8 B x 16 bytes of states fit no one
//     card, so every row is sharded; every multi-GPU row says it talks over PCIe (or that the
//     interconnect is unknown); the balanced pick is within 30 % of the cheapest at P90.
TEST(PlanPanelTest, Finetune8bOnPcieCardsIsShardedAndFlagged) {
  const std::vector<std::string> q = {
      "--model",    "llama-3-8b",
      "--tokens",   "1B",
      "--gpus",     "RTX-4090,RTX-3090,L40S,A40,RTX-A6000,A100-PCIe-80GB,H100-PCIe-80GB",
      "--deadline", "7d"};
  const json d = Plan(With(q, {"--top", "50"}));
  ASSERT_FALSE(d["candidates"].empty());
  for (const json& c : d["candidates"]) {
    EXPECT_TRUE(Sharded(c)) << c["rank"];
    EXPECT_GE(c["memory"]["headroom_fraction"].get<double>(), 0.10) << c["rank"];
    if (c["gpu_count"].get<int>() > 1) {
      EXPECT_TRUE(Warns(c, "pcie-multi-gpu") || Warns(c, "interconnect-unknown")) << c["rank"];
    }
  }
  ExpectBalancedNearCheapest(q);
}

// R4. Mixtral 8x7B (8 experts, top-2): the planner splits the experts (ep > 1) in its top rows,
//     keeps the all-to-all inside a node (tp x cp x ep <= GPUs per node), ep divides the experts
//     and dp, and only frameworks with expert parallelism run it (Megatron-Core, DeepSpeed-MoE,
//     torchtitan FSDP2; not the plain HF Trainer).
TEST(PlanPanelTest, MixtralSplitsItsExpertsWithinANode) {
  const json d =
      Plan({"--model", "mixtral-8x7b", "--tokens", "20B", "--deadline", "14d", "--top", "100"});
  ASSERT_FALSE(d["candidates"].empty());
  EXPECT_EQ(d["model"]["name"], "mixtral-8x7b");
  int split_in_top5 = 0;
  for (const json& c : d["candidates"]) {
    const json& p = c["parallel"];
    const int ep = p["ep"].get<int>();
    EXPECT_EQ(8 % ep, 0) << c["rank"];
    EXPECT_EQ(p["dp"].get<int>() % ep, 0) << c["rank"];
    EXPECT_LE(p["tp"].get<int>() * p["cp"].get<int>() * ep, c["gpus_per_node"].get<int>())
        << c["rank"];
    if (ep > 1) {
      EXPECT_NE(p["framework"], "hf") << c["rank"];
      if (c["rank"].get<int>() <= 5) ++split_in_top5;
    }
  }
  EXPECT_GT(split_in_top5, 0);
}

// R5. Continued pre-training at 128k context: context parallelism (within a node, with tp)
//     carries the sequence in the top rows, and every cp divides the sequence in 2 x cp chunks.
TEST(PlanPanelTest, LongContext128kUsesContextParallelism) {
  const json d = Plan({"--model", "qwen2-7b", "--tokens", "2B", "--seq-len", "131072",
                       "--global-batch", "16", "--deadline", "7d", "--top", "50"});
  ASSERT_FALSE(d["candidates"].empty());
  for (const json& c : d["candidates"]) {
    const json& p = c["parallel"];
    const int cp = p["cp"].get<int>();
    EXPECT_EQ(131072 % (2 * cp), 0) << c["rank"];
    EXPECT_LE(p["tp"].get<int>() * cp, c["gpus_per_node"].get<int>()) << c["rank"];
    EXPECT_GE(c["memory"]["headroom_fraction"].get<double>(), 0.10) << c["rank"];
    if (c["rank"].get<int>() <= 3) {
      EXPECT_GT(cp, 1) << c["rank"];
    }
  }
}

// R6. A tight budget that only spot meets (hyperscalers, $500 for an 8B on 5B tokens): the rows
//     that meet it are spot rows within the budget; every on-demand row is flagged over budget;
//     the top row meets the constraints; no spot row is faster than its on-demand twin; and a
//     spot row within the budget only on average (its P90 cost beyond it, as every top row
//     here) says budget-at-risk-p90, so the user knows one run in ten costs more.
TEST(PlanPanelTest, TightBudgetOnlySpotMeets) {
  const json d = Plan({"--model", "llama-3-8b", "--tokens", "5B", "--deadline", "10d",
                       "--providers", "aws,gcp,azure", "--budget-usd", "500", "--top", "400"});
  ASSERT_FALSE(d["candidates"].empty());
  EXPECT_TRUE(d["candidates"][0]["meets_constraints"].get<bool>());
  std::map<std::string, double> on_demand_hours;
  for (const json& c : d["candidates"]) {
    const std::string twin = c["provider"].get<std::string>() + " " +
                             c["instance_type"].get<std::string>() + " x" +
                             std::to_string(c["nodes"].get<int>()) + " " + c["parallel"].dump();
    if (c["pricing"] == "on_demand") {
      EXPECT_TRUE(Warns(c, "budget-exceeded")) << c["rank"];
      on_demand_hours[twin] = c["time"]["total_hours"].get<double>();
    }
    if (c["meets_constraints"].get<bool>()) {
      EXPECT_EQ(c["pricing"], "spot") << c["rank"];
      EXPECT_LE(Usd(c), 500.0) << c["rank"];
      // Within the budget on average only: a P90 cost beyond it is said.
      EXPECT_EQ(Warns(c, "budget-at-risk-p90"), P90Usd(c) > 500.0) << c["rank"];
    }
  }
  for (const json& c : d["candidates"]) {
    if (c["pricing"] != "spot") continue;
    const std::string twin = c["provider"].get<std::string>() + " " +
                             c["instance_type"].get<std::string>() + " x" +
                             std::to_string(c["nodes"].get<int>()) + " " + c["parallel"].dump();
    auto it = on_demand_hours.find(twin);
    if (it != on_demand_hours.end()) {
      EXPECT_GE(c["time"]["total_hours"].get<double>(), it->second * 0.999) << c["rank"];
    }
  }
}

// R7. B200 or H100 for an FP8 run: on the same 8-GPU node shape, B200 is faster per GPU, and on
//     the same layout by no more than its datasheet FP8 ratio (4500 / 1979 dense TFLOP/s,
//     catalog/gpus.csv; its best layout may gain more where its 180 GB avoid the tensor
//     parallelism an 80 GB H100 needs); every B200 row says it is uncalibrated; an A100 (no FP8
//     tensor cores) is skipped with the reason.
TEST(PlanPanelTest, B200VersusH100ForFp8) {
  const json d = Plan({"--model", "llama-3-8b", "--tokens", "10B", "--precision", "fp8", "--gpus",
                       "B200,H100-SXM5-80GB,A100-SXM4-80GB", "--max-nodes", "1", "--pricing",
                       "on_demand", "--top", "400"});
  ASSERT_FALSE(d["candidates"].empty());
  double b200 = 0, h100 = 0;
  json h100_layout;
  for (const json& c : d["candidates"]) {
    EXPECT_NE(c["gpu"], "A100-SXM4-80GB") << c["rank"];
    const double rate = c["time"]["tokens_per_second_per_gpu"].get<double>();
    if (c["gpu"] == "B200") {
      EXPECT_TRUE(Warns(c, "uncalibrated-gpu")) << c["rank"];
      if (c["gpus_per_node"] == 8) b200 = std::max(b200, rate);
    }
    if (c["gpu"] == "H100-SXM5-80GB" && c["gpus_per_node"] == 8 && rate > h100) {
      h100 = rate;
      h100_layout = c["parallel"];
    }
  }
  ASSERT_GT(b200, 0);
  ASSERT_GT(h100, 0);
  EXPECT_GT(b200, h100);
  // The H100's best layout on both GPUs: the same work per GPU.
  auto rate_on = [&](const std::string& gpu) {
    const json& p = h100_layout;
    RunOutput r = RunFulcrum({"estimate",
                              "--model",
                              "llama-3-8b",
                              "--precision",
                              "fp8",
                              "--gpu",
                              gpu,
                              "--tp",
                              std::to_string(p["tp"].get<int>()),
                              "--pp",
                              std::to_string(p["pp"].get<int>()),
                              "--dp",
                              std::to_string(p["dp"].get<int>()),
                              "--zero",
                              std::to_string(p["zero"].get<int>()),
                              "--micro-batch",
                              std::to_string(p["micro_batch"].get<int>()),
                              "--global-batch",
                              std::to_string(p["global_batch"].get<int64_t>()),
                              "--recompute",
                              p["recompute"].get<std::string>(),
                              "--framework",
                              p["framework"].get<std::string>(),
                              "--json"},
                             NoUserOffers());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out)["time"]["tokens_per_second_per_gpu"].get<double>();
  };
  EXPECT_LE(rate_on("B200") / rate_on("H100-SXM5-80GB"), 4500.0 / 1979.0 * 1.02) << h100_layout;
  bool skipped = false;
  for (const json& n : d["notes"]) {
    const std::string note = n;
    skipped = skipped || (note.find("no fp8 tensor-core mode") != std::string::npos &&
                          note.find("A100-SXM4-80GB") != std::string::npos);
  }
  EXPECT_TRUE(skipped);
}

// R10. The same provider's same GPUs in the same time at a third more the price or beyond score
//      lower, visibly: on the 7B fine-tune GCP's a3-megagpu-8g ($684) scored exactly as its
//      a3-highgpu-8g ($319), because the cost criterion was 0 for every row beyond twice the
//      cheapest. (Since a3-highgpu-8g carries its on-demand SKU price that pair is close in price;
//      asked of AWS alone, g6e.24xlarge at 1.44x g6e.12xlarge, the same 4 L40S at about three
//      times the cheapest row, is the twin left.)
TEST(PlanPanelTest, ADearerTwinOfTheSameProviderScoresLower) {
  const json d =
      Plan(With(kFinetune7b, {"--pricing", "on_demand", "--providers", "aws", "--top", "400"}));
  int pairs = 0;
  for (const json& a : d["candidates"]) {
    for (const json& b : d["candidates"]) {
      if (a["provider"] != b["provider"] || a["gpu"] != b["gpu"] ||
          a["gpu_count"] != b["gpu_count"] || a["nodes"] != b["nodes"]) {
        continue;
      }
      if (std::abs(P90Hours(a) - P90Hours(b)) > 0.01 * P90Hours(a)) continue;
      if (!(P90Usd(b) > 1.3 * P90Usd(a))) continue;
      ++pairs;
      EXPECT_GT(a["score"]["total"].get<double>(), b["score"]["total"].get<double>() + 0.001)
          << a["instance_type"] << " $" << P90Usd(a) << " vs " << b["instance_type"] << " $"
          << P90Usd(b);
      EXPECT_LT(a["rank"].get<int>(), b["rank"].get<int>());
    }
  }
  EXPECT_GT(pairs, 0);
}

// R8. Where the data may live: "--regions us" plans US regions only (AWS us-*, Azure eastus,
//     "..., US, NA" marketplace hosts), never the "us" inside "Australia"; an unknown region is
//     exit 2 with the nearest names.
TEST(PlanPanelTest, RegionFilterKeepsTheDataInTheRegion) {
  const json d = Plan({"--model", "llama-2-7b", "--method", "lora", "--tokens", "100M", "--regions",
                       "us", "--top", "400"});
  ASSERT_FALSE(d["candidates"].empty());
  std::set<std::string> providers;
  for (const json& c : d["candidates"]) {
    const std::string region = c["region"];
    providers.insert(c["provider"].get<std::string>());
    EXPECT_EQ(region.find("Australia"), std::string::npos) << c["rank"];
    std::string lower = region;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    EXPECT_TRUE(lower.rfind("us", 0) == 0 || lower.find(", us") != std::string::npos ||
                (lower.size() >= 2 && lower.compare(lower.size() - 2, 2, "us") == 0))
        << c["rank"] << " " << region;
  }
  EXPECT_GE(providers.size(), 4u);
  RunOutput unknown =
      RunFulcrum({"plan", "--model", "llama-2-7b", "--tokens", "1B", "--regions", "eu-west-9"},
                 NoUserOffers());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("nearest"), std::string::npos) << unknown.err;
}

// R9. Billing as the provider bills it: a 15-minute job on one GPU is billed by the provider's
//     published granularity (per second or per minute, catalog/providers.csv), never a whole
//     hour; providers without published terms are flagged billing-terms-unknown.
TEST(PlanPanelTest, ShortJobsAreBilledByTheProvidersIncrement) {
  const json d = Plan({"--model", "gpt2", "--seq-len", "1024", "--tokens", "20M", "--max-gpus", "1",
                       "--pricing", "on_demand", "--top", "400"});
  RunOutput providers = RunFulcrum({"providers", "--json"}, NoUserOffers());
  ASSERT_EQ(providers.exit_code, 0) << providers.err;
  const json terms = json::parse(providers.out);
  std::map<std::string, std::optional<double>> granularity;
  for (const json& p : terms["providers"]) {
    const json& g = p["billing_granularity_seconds"];
    granularity[p["name"].get<std::string>()] =
        g.is_null() ? std::nullopt : std::optional<double>(g.get<double>());
  }
  ASSERT_FALSE(d["candidates"].empty());
  int checked = 0;
  for (const json& c : d["candidates"]) {
    const double hours = c["time"]["total_hours"].get<double>();
    if (hours > 0.9) continue;
    const double per_hour = c["cost"]["usd_per_hour"].get<double>();
    // The instance part of the expected cost (work, checkpoints, failures; no disk or egress).
    const json& b = c["cost"]["breakdown"];
    const double compute = Usd(c) - b["storage_usd"].get<double>() - b["egress_usd"].get<double>();
    EXPECT_LT(compute, 0.9 * per_hour)
        << c["rank"] << " " << c["provider"] << ": whole hour billed";
    auto it = granularity.find(c["provider"].get<std::string>());
    ASSERT_NE(it, granularity.end()) << c["provider"];
    EXPECT_EQ(Warns(c, "billing-terms-unknown"), !it->second.has_value()) << c["provider"];
    if (it->second) {
      // The JSON rounds total_hours to 3 decimals (3.6 s): bill both ends of that interval.
      auto billed_hours = [&](double h) {
        return std::ceil(h * 3600 / *it->second - 1e-9) * *it->second / 3600;
      };
      EXPECT_GE(compute, per_hour * billed_hours(hours - 0.0005) - 0.011)
          << c["rank"] << " " << c["provider"];
      EXPECT_LE(compute, per_hour * billed_hours(hours + 0.0005) + 0.011)
          << c["rank"] << " " << c["provider"];
    }
    ++checked;
  }
  EXPECT_GT(checked, 5);
}

// 31. (issue 25 review) Google documents A3 Edge (a3-edgegpu-8g) for serving inference only
//     (catalog/offers.csv use: serving, its source in use_source): no training plan proposes it,
//     whatever the question; `offers` still lists it, marked.
TEST(PlanPanelTest, ServingOnlyMachineTypesAreNeverTrainingCandidates) {
  for (const std::vector<std::string>& q :
       {kFinetune7b,
        {SourcePath("examples/llama-8b-lora.yaml")},
        {"--model", "llama-2-7b", "--tokens", "2B", "--providers", "gcp", "--gpus", "H100"}}) {
    const json d = Plan(With(q, {"--top", "100000"}));
    ASSERT_FALSE(d["candidates"].empty());
    for (const json& c : d["candidates"]) {
      EXPECT_NE(c["instance_type"], "a3-edgegpu-8g") << "#" << c["rank"] << " " << c["pricing"];
    }
  }
  const RunOutput offers = RunFulcrum({"offers", "--provider", "gcp", "--json"}, NoUserOffers());
  ASSERT_EQ(offers.exit_code, 0) << offers.err;
  bool listed = false;
  const json listing = json::parse(offers.out);
  for (const json& o : listing["offers"]) {
    if (o["instance_type"] != "a3-edgegpu-8g") continue;
    listed = true;
    EXPECT_EQ(o.value("use", json()), "serving");
    EXPECT_NE(o.value("use_source", json()).dump().find("cloud.google.com"), std::string::npos);
  }
  EXPECT_TRUE(listed);
}

// The offers whose catalog row says their price is unverified (caveat price-unverified), keyed
// "provider/instance/region"; spot-only rows (GCP's A4) are listed by `offers --spot` alone.
std::set<std::string> PriceUnverifiedOffers() {
  std::set<std::string> out;
  for (const bool spot : {false, true}) {
    std::vector<std::string> args = {"offers", "--json"};
    if (spot) args.push_back("--spot");
    const RunOutput r = RunFulcrum(args, NoUserOffers());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const json listing = json::parse(r.out);
    for (const json& o : listing["offers"]) {
      if (o["caveat"].is_string() &&
          o["caveat"].get<std::string>().rfind("price-unverified:", 0) == 0) {
        out.insert(o["provider"].get<std::string>() + "/" + o["instance_type"].get<std::string>() +
                   "/" + o["region"].get<std::string>());
      }
    }
  }
  return out;
}

// 32. (issue 25 review) A row whose price the catalog cannot confirm (caveat price-unverified:
//     SkyPilot's GCP us-central1 H100 figure at half the on-demand SKU, Hyperbolic's marketplace
//     snapshot) never outranks a fully known row (price confirmed; one GPU per node or a stated
//     interconnect) that meets the constraints and is as fast and as cheap or better (P90 time,
//     expected cost) — under each objective. The rule implemented (docs/RANKING.md) is
//     stronger: every such row ranks after every confirmed one that meets the constraints.
TEST(PlanPanelTest, AnUnverifiedPriceNeverOutranksAnEqualOrBetterKnownRow) {
  const std::set<std::string> unverified = PriceUnverifiedOffers();
  ASSERT_FALSE(unverified.empty());
  auto key = [](const json& c) {
    return c["provider"].get<std::string>() + "/" + c["instance_type"].get<std::string>() + "/" +
           c["region"].get<std::string>();
  };
  for (const char* objective : {"balanced", "cheapest", "fastest"}) {
    const json d = Plan(With(kFinetune7b, {"--top", "100000", "--objective", objective}));
    int pairs = 0;
    for (const json& u : d["candidates"]) {
      if (!u["meets_constraints"].get<bool>() || !unverified.count(key(u))) continue;
      for (const json& k : d["candidates"]) {
        if (!k["meets_constraints"].get<bool>() || unverified.count(key(k))) continue;
        if (k["gpus_per_node"].get<int>() > 1 && Warns(k, "interconnect-unknown")) continue;
        if (P90Hours(k) > P90Hours(u) || Usd(k) > Usd(u)) continue;
        ++pairs;
        EXPECT_LT(k["rank"].get<int>(), u["rank"].get<int>())
            << objective << ": #" << u["rank"] << " " << key(u) << " " << u["pricing"]
            << " (price unverified) outranks #" << k["rank"] << " " << key(k) << " "
            << k["pricing"];
      }
    }
    EXPECT_GT(pairs, 0) << objective;
  }
}

}  // namespace
}  // namespace fulcrum::testing
