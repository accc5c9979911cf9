#include "validate/report.h"

#include <gtest/gtest.h>

#include "validate/validate.h"
#include "validate/validation.h"

namespace fulcrum::validate {
namespace {

ValidateReport Sample() {
  ValidateReport r;
  PhaseResult env;
  env.name = "environment";
  env.verdict = Verdict::kSkipped;
  env.reasons = {"skipped by --skip"};
  PhaseResult drill;
  drill.name = "fault-drill";
  drill.verdict = Verdict::kPass;
  drill.reasons = {"1 drill(s) resumed from the last complete checkpoint"};
  r.phases = {env, drill};
  DrillResult crash;
  crash.fault = "crash";
  crash.verdict = Verdict::kPass;
  crash.detect_seconds = 0.25;
  crash.resume_seconds = 1.5;
  crash.lost_steps = 7;
  crash.resumed_from = "/ckpt/step-00000040";
  crash.reason = "resumed";
  DrillResult cut;
  cut.fault = "network-cut";
  cut.verdict = Verdict::kSkipped;
  cut.reason = "needs root (network namespaces)";
  r.drills = {crash, cut};
  return r;
}

TEST(ValidateReportTest, SkippedPhasesPassAndAFailedOneExitsThree) {
  ValidateReport r = Sample();
  EXPECT_EQ(ValidateExitCode(r), 0);
  r.phases[1].verdict = Verdict::kFail;
  EXPECT_EQ(ValidateExitCode(r), 3);
}

TEST(ValidateReportTest, JsonHasTheDocumentedFieldsWithNullForUnknown) {
  const nlohmann::json j = ReportJson(Sample());
  ASSERT_EQ(j["phases"].size(), 2u);
  EXPECT_EQ(j["phases"][0]["name"], "environment");
  EXPECT_EQ(j["phases"][0]["verdict"], "skipped");
  EXPECT_TRUE(j["phases"][0]["metrics"].is_object());
  EXPECT_EQ(j["phases"][0]["reasons"][0], "skipped by --skip");
  const auto& crash = j["drills"][0];
  EXPECT_EQ(crash["fault"], "crash");
  EXPECT_EQ(crash["verdict"], "pass");
  EXPECT_DOUBLE_EQ(crash["detect_seconds"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(crash["resume_seconds"].get<double>(), 1.5);
  EXPECT_EQ(crash["lost_steps"], 7);
  EXPECT_EQ(crash["resumed_from"], "/ckpt/step-00000040");
  const auto& cut = j["drills"][1];
  for (const char* key : {"detect_seconds", "resume_seconds", "lost_steps", "resumed_from"})
    EXPECT_TRUE(cut[key].is_null()) << key;
  EXPECT_EQ(cut["reason"], "needs root (network namespaces)");
}

TEST(ValidateReportTest, TextShowsEachPhaseAndDrill) {
  const std::string text = ReportText(Sample());
  EXPECT_NE(text.find("fault-drill  pass"), std::string::npos) << text;
  EXPECT_NE(text.find("network-cut"), std::string::npos) << text;
  EXPECT_NE(text.find("validate: pass"), std::string::npos) << text;
}

TEST(ValidateReportTest, HtmlEmbedsTheChartLibraryAndEscapesText) {
  ValidateReport r = Sample();
  r.phases[0].reasons = {"<b>odd</b>"};
  SeriesData s;
  s.title = "GPU 0 </script><script>alert(1)</script>";
  s.points = {{1.0, 2.0}, {2.0, 3.0}};
  r.series.push_back(s);
  const std::string html = ReportHtml(r);
  EXPECT_NE(html.find("uPlot"), std::string::npos);
  EXPECT_EQ(html.find("<b>odd</b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;odd&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(html.find("</script><script>alert(1)"), std::string::npos)
      << "data cannot end the script";
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
}

TEST(ValidateOptionsTest, CheckpointStepIsTheLastNumberOfTheName) {
  EXPECT_EQ(CheckpointStep("/a/b/step-00000030.pt"), 30);
  EXPECT_EQ(CheckpointStep("/run1/ckpt/global_step120"), 120);
  EXPECT_EQ(CheckpointStep("/x/epoch3-step-0450"), 450);
  EXPECT_FALSE(CheckpointStep("/x/last.ckpt").has_value());
}

TEST(ValidateOptionsTest, BadNamesAndDurationsNameTheFlag) {
  ValidateOptions o;
  o.drills = {"crash", "crsh"};
  Status s = CheckValidateOptions(o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("--drills: unknown name 'crsh'"), std::string::npos) << s.message();
  ASSERT_TRUE(s.detail());
  EXPECT_EQ(s.detail()->nearest.front(), "crash");
  o.drills.clear();
  o.small_run_seconds = 0;
  EXPECT_NE(CheckValidateOptions(o).message().find("--small-run"), std::string::npos);
  o.small_run_seconds = 60;
  o.progress_regex = "step \\d+";
  EXPECT_NE(CheckValidateOptions(o).message().find("no capture group"), std::string::npos);
  o.progress_regex = "^step (\\d+)";
  o.sim_scenario = "faults.yaml";
  EXPECT_NE(CheckValidateOptions(o).message().find("--sim-scenario needs --source sim"),
            std::string::npos);
  o.source = "sim";
  EXPECT_TRUE(CheckValidateOptions(o).ok());
}

}  // namespace
}  // namespace fulcrum::validate
