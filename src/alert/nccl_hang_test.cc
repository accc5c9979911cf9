// The hang alert names the NCCL rank behind it: the shipped GpuJobHung rule fires, the stalled
// rank parsed from a RAS report (format strings of NCCL v2.29.2-1, tests/support/fake_nccl_ras.h)
// goes into its summary and labels, and the notification receivers get carries it.
#include "alert/nccl_hang.h"

#include <gtest/gtest.h>

#include "alert/notify.h"
#include "alert/rules_yaml.h"
#include "support/fake_nccl_ras.h"

namespace fulcrum::alert {
namespace {

constexpr double kT0 = 1'700'000'000;

std::vector<Transition> FireHang() {
  auto rules = DefaultRules();
  EXPECT_TRUE(rules.ok());
  std::vector<Rule> hang;
  for (const Rule& r : *rules) {
    if (r.name == kHangRuleName) hang.push_back(r);
  }
  EXPECT_EQ(hang.size(), 1u);
  Evaluator e(hang);
  const double age = hang[0].threshold + 1;
  std::vector<Transition> out;
  for (double t : {0.0, hang[0].for_seconds}) {
    std::vector<Sample> batch = {{"gpu_utilization_ratio", 1, 1.0, kT0 + t},
                                 {"gpu_power_used_ratio", 1, 0.25, kT0 + t},
                                 {"job_progress_age_seconds", 1, age + t, kT0 + t}};
    out = e.Evaluate(batch);
  }
  return out;
}

std::vector<telemetry::NcclLaggingRank> Stalled() {
  auto report = telemetry::ParseNcclRasText(testing::StalledText(8, 5, 42, 0xbeefULL));
  EXPECT_TRUE(report.ok());
  return telemetry::FindLaggingRanks(*report);
}

TEST(NcclHangTest, HangAlertNamesRankHostPidAndGpu) {
  std::vector<Transition> fired = FireHang();
  ASSERT_EQ(fired.size(), 1u);
  ASSERT_TRUE(IsHangFiring(fired[0]));
  const std::string before = fired[0].annotations.at("summary");
  NameStalledRanks(fired, Stalled());
  const std::string summary = fired[0].annotations.at("summary");
  EXPECT_EQ(summary.substr(0, before.size()), before);
  EXPECT_NE(summary.find("NCCL: rank 5 (pid 4005 on 10.0.0.2, GPU 1): AllReduce op 41 of 42"),
            std::string::npos)
      << summary;
  EXPECT_EQ(fired[0].labels.at("nccl_rank"), "5");
  EXPECT_EQ(fired[0].labels.at("nccl_host"), "10.0.0.2");
  EXPECT_EQ(fired[0].labels.at("nccl_pid"), "4005");
  EXPECT_EQ(fired[0].labels.at("nccl_gpu"), "1");
  Receiver hook{"hook", "http://127.0.0.1:1/hook", ReceiverFormat::kGeneric, "", "", ""};
  auto notes = MakeNotifications(fired[0], {hook}, {"node-7", "http://127.0.0.1:9400"}, kT0);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].body.find("rank 5 (pid 4005 on 10.0.0.2, GPU 1)"), std::string::npos)
      << notes[0].body;
}

TEST(NcclHangTest, OtherAlertsAndNoStallAreLeftAlone) {
  std::vector<Transition> fired = FireHang();
  ASSERT_EQ(fired.size(), 1u);
  const std::string summary = fired[0].annotations.at("summary");
  NameStalledRanks(fired, {});
  EXPECT_EQ(fired[0].annotations.at("summary"), summary);
  EXPECT_FALSE(fired[0].labels.count("nccl_rank"));
  Transition hot;
  hot.rule_name = "GpuTooHot";
  hot.to = AlertStatus::kFiring;
  hot.annotations["summary"] = "GPU 0 at 95 C";
  std::vector<Transition> others = {hot};
  others.push_back(fired[0]);
  others.back().to = AlertStatus::kResolved;
  NameStalledRanks(others, Stalled());
  EXPECT_EQ(others[0].annotations.at("summary"), "GPU 0 at 95 C");
  EXPECT_EQ(others[1].annotations.at("summary"), summary);
  others[0].labels["hang"] = "true";  // a user's own hang rule opts in by label
  NameStalledRanks(others, Stalled());
  EXPECT_NE(others[0].annotations.at("summary").find("rank 5"), std::string::npos);
}

}  // namespace
}  // namespace fulcrum::alert
