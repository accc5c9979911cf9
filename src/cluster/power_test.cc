// Slurm power saving without Slurm or a cloud: a fake PowerEnv records every command (the
// provider's argv and scontrol's) and answers as the test says; jobs.db is in memory.
#include "cluster/power.h"

#include <gtest/gtest.h>

#include <map>

#include "store/cloud_nodes.h"

namespace fulcrum::cluster {
namespace {

CloudOffer Offer(const std::string& provider, const std::string& type, double usd,
                 double billing = 1) {
  CloudOffer o;
  o.provider = provider;
  o.instance_type = type;
  o.region = "us-east-1";
  o.offer = provider + "/" + type + "/us-east-1";
  o.gpu = "H100-SXM5-80GB";
  o.gpus = 8;
  o.vcpus = 192;
  o.memory_gib = 2048;
  o.usd_per_hour = usd;
  o.billing_seconds = billing;
  return o;
}

class PowerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = store::Database::Open(":memory:");
    ASSERT_TRUE(db.ok());
    db_.emplace(std::move(*db));
    config_.origin = "slurm.yaml";
    config_.resume_argv = {"/opt/cloud", "up", "{node}", "--type", "{instance_type}", "{region}"};
    config_.suspend_argv = {"/opt/cloud", "down", "{node}"};
    config_.capacity_errors = {"InsufficientInstanceCapacity"};
    env_.now = [this] { return now_; };
    env_.log = [this](const std::string& line) { log_.push_back(line); };
    env_.run = [this](const std::vector<std::string>& argv, double) -> Result<CaptureResult> {
      calls_.push_back(argv);
      CaptureResult r;
      r.exit_code = 0;
      if (argv[0] == "/opt/cloud" && answers_.count(argv[2])) r = answers_[argv[2]];
      return r;
    };
    env_.start_detached = [this](const std::vector<std::string>& argv) {
      detached_.push_back(argv);
      return Status::Ok();
    };
    env_.self_argv = {"fulcrum", "slurm", "suspend", "--config", "slurm.yaml"};
  }

  std::vector<std::vector<std::string>> CallsTo(const std::string& program) {
    std::vector<std::vector<std::string>> out;
    for (const auto& c : calls_) {
      if (c[0] == program) out.push_back(c);
    }
    return out;
  }

  std::optional<store::Database> db_;
  PowerConfig config_;
  PowerEnv env_;
  double now_ = 1000;
  std::vector<std::string> log_;
  std::vector<std::vector<std::string>> calls_, detached_;
  std::map<std::string, CaptureResult> answers_;  // by node
  const std::vector<CloudOffer> offers_ = {Offer("aws", "p5.48xlarge", 8),
                                           Offer("lambda", "gpu_8x_h100_sxm5", 6)};
};

TEST(PowerHostlistTest, ExpandsSlurmHostlists) {
  EXPECT_EQ(*ExpandHostlist("gpu-[1-3,5],cpu-07"),
            (std::vector<std::string>{"gpu-1", "gpu-2", "gpu-3", "gpu-5", "cpu-07"}));
  EXPECT_EQ(*ExpandHostlist("n[08-10]"), (std::vector<std::string>{"n08", "n09", "n10"}));
  EXPECT_EQ(*ExpandHostlist("solo"), (std::vector<std::string>{"solo"}));
  for (const char* bad : {"gpu-[1-", "gpu-[3-1]", "gpu-[a-b]"}) {
    EXPECT_EQ(ExpandHostlist(bad).status().code(), StatusCode::kInvalidInput) << bad;
  }
  EXPECT_EQ(*ResumeFileHostlist(R"({"all_nodes_resume": "gpu-[1-2]", "jobs": []})"), "gpu-[1-2]");
  // What slurmctld 22.05.8 wrote.
  EXPECT_EQ(*ResumeFileHostlist(R"({"jobs":[{"job_id":1,"nodes":"a-1"}],"all_nodes":"a-[1-2]"})"),
            "a-[1-2]");
  EXPECT_FALSE(ResumeFileHostlist("{}").ok());
}

TEST(PowerConfigTest, ParsesAndNamesTheNearestFieldOfATypo) {
  auto c = ParsePowerConfig(R"(budget_usd: 50
offers: [aws/p5.48xlarge/us-east-1]
max_nodes: 2
provision:
  resume: [/opt/cloud, up, "{node}"]
  suspend: [/opt/cloud, down, "{node}"]
  capacity_exit_codes: [3]
  end_before_hour: 90s
)",
                            "slurm.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(*c->budget_usd, 50);
  EXPECT_EQ(c->max_nodes, 2);
  EXPECT_EQ(c->capacity_exit_codes, std::vector<int>{3});
  EXPECT_EQ(c->end_before_hour_seconds, 90);
  auto typo = ParsePowerConfig("budget: 5\nprovision: {resume: [a], suspend: [b]}\n", "s.yaml");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("s.yaml:1"), std::string::npos) << typo.status().message();
  EXPECT_NE(typo.status().message().find("budget_usd"), std::string::npos);
  auto shell = ParsePowerConfig("provision: {resume: 'cloud up $NODE', suspend: [b]}\n", "s.yaml");
  EXPECT_FALSE(shell.ok()) << "a shell string is not an argv";
}

TEST_F(PowerTest, ResumeRunsTheProviderArgvPerNodeAndRecordsOfferAndPrice) {
  auto out =
      ResumeNodes(config_, offers_, {"aws-p5-48xlarge-1", "lambda-gpu-8x-h100-sxm5-2"}, *db_, env_);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].result, "started");
  EXPECT_EQ(out[1].result, "started");
  ASSERT_EQ(CallsTo("/opt/cloud").size(), 2u);
  EXPECT_EQ(CallsTo("/opt/cloud")[0],
            (std::vector<std::string>{"/opt/cloud", "up", "aws-p5-48xlarge-1", "--type",
                                      "p5.48xlarge", "us-east-1"}));
  EXPECT_TRUE(CallsTo("scontrol").empty());
  auto rows = store::ListCloudNodes(*db_);
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[1].offer, "lambda/gpu_8x_h100_sxm5/us-east-1");
  EXPECT_EQ((*rows)[1].price_per_hour_usd, 6);
  EXPECT_EQ((*rows)[1].started_at, 1000);
  EXPECT_EQ((*rows)[1].state, "running");
  EXPECT_TRUE(CallsTo("scontrol").empty()) << "the provider printed no NodeAddr";
  // Asked again for a node that runs: nothing is started twice.
  EXPECT_EQ(ResumeNodes(config_, offers_, {"aws-p5-48xlarge-1"}, *db_, env_)[0].result, "running");
  EXPECT_EQ(CallsTo("/opt/cloud").size(), 2u);
}

TEST_F(PowerTest, ABudgetRefusalMarksTheNodeDownWithTheReasonAndStartsNothing) {
  config_.budget_usd = 11;
  ResumeNodes(config_, offers_, {"aws-p5-48xlarge-1"}, *db_, env_);
  now_ += 1800;  // half an hour of $8/h: $4 spent
  auto out =
      ResumeNodes(config_, offers_, {"aws-p5-48xlarge-2", "lambda-gpu-8x-h100-sxm5-1"}, *db_, env_);
  // $4 + an hour at $8 = $12 passes $11; $4 + an hour at $6 = $10 does not.
  EXPECT_EQ(out[0].result, "refused-budget") << out[0].detail;
  EXPECT_EQ(out[1].result, "started") << out[1].detail;
  EXPECT_NE(out[0].detail.find("spend $4.00 + $8.00 for an hour of aws/p5.48xlarge/us-east-1 "
                               "would pass --budget-usd $11.00"),
            std::string::npos)
      << out[0].detail;
  const auto scontrol = CallsTo("scontrol");
  ASSERT_EQ(scontrol.size(), 1u);
  EXPECT_EQ(scontrol[0][2], "nodename=aws-p5-48xlarge-2");
  EXPECT_EQ(scontrol[0][3], "state=down");
  EXPECT_EQ(scontrol[0][4].rfind("reason=fulcrum: budget:", 0), 0u) << scontrol[0][4];
  EXPECT_EQ(CallsTo("/opt/cloud").size(), 2u) << "the refused node was not started";
  bool logged = false;
  for (const auto& line : log_) logged = logged || line.find("refused-budget") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST_F(PowerTest, ACapacityErrorMarksTheNodeDownAtOnce) {
  CaptureResult full;
  full.exit_code = 1;
  full.err = "An error occurred (InsufficientInstanceCapacity) when calling RunInstances";
  answers_["aws-p5-48xlarge-1"] = full;
  CaptureResult other;
  other.exit_code = 7;
  other.err = "quota exceeded";
  answers_["aws-p5-48xlarge-2"] = other;
  auto out = ResumeNodes(config_, offers_, {"aws-p5-48xlarge-1", "aws-p5-48xlarge-2"}, *db_, env_);
  EXPECT_EQ(out[0].result, "capacity");
  EXPECT_EQ(out[1].result, "failed");
  const auto scontrol = CallsTo("scontrol");
  ASSERT_EQ(scontrol.size(), 2u);
  EXPECT_EQ(scontrol[0][4].rfind("reason=fulcrum: capacity: aws/p5.48xlarge/us-east-1", 0), 0u)
      << scontrol[0][4];
  EXPECT_EQ(scontrol[1][4].rfind("reason=fulcrum: resume failed:", 0), 0u) << scontrol[1][4];
  auto rows = store::ListCloudNodes(*db_);
  EXPECT_EQ((*rows)[0].state, "failed");
  EXPECT_EQ(store::BilledUsd((*rows)[0], now_ + 3600), 0) << "a node that never ran costs nothing";
}

// Slurm requeues the jobs of a node marked DOWN and holds them for cred_expire (120 s by
// default); they never started, so fulcrum releases them for the next node type at once.
TEST_F(PowerTest, ACapacityErrorReleasesTheJobsSlurmRequeuesFromTheNode) {
  CaptureResult full;
  full.exit_code = 1;
  full.err = "InsufficientInstanceCapacity";
  int polls = 0;
  env_.run = [&](const std::vector<std::string>& argv, double) -> Result<CaptureResult> {
    calls_.push_back(argv);
    CaptureResult r;
    r.exit_code = 0;
    if (argv[0] == "/opt/cloud") return full;
    if (argv[0] == "squeue" && argv[2] == "-w") r.out = "17\n18\n";
    // Job 17 shows its requeue hold on the second look; job 18 already runs elsewhere.
    if (argv[0] == "squeue" && argv[2] == "-j")
      r.out = argv[3] == "18" ? "RUNNING\n" : (++polls < 2 ? "REQUEUED\n" : "PENDING\n");
    return r;
  };
  std::vector<double> slept;
  env_.sleep = [&](double s) { slept.push_back(s); };
  ResumeNodes(config_, offers_, {"aws-p5-48xlarge-1"}, *db_, env_);
  const auto scontrol = CallsTo("scontrol");
  ASSERT_EQ(scontrol.size(), 2u);
  EXPECT_EQ(scontrol[0][3], "state=down");
  EXPECT_EQ(scontrol[0].back(), "nodeaddr=192.0.2.1") << "Slurm's kill RPC needs no resolver";
  EXPECT_EQ(scontrol[1],
            (std::vector<std::string>{"scontrol", "update", "jobid=17", "starttime=now"}));
  // The jobs were read before the DOWN mark (after it, Slurm has moved them off the node).
  size_t listed = 0, down = 0;
  for (size_t i = 0; i < calls_.size(); ++i) {
    if (calls_[i][0] == "squeue" && calls_[i][2] == "-w") listed = i;
    if (calls_[i][0] == "scontrol" && calls_[i][3] == "state=down") down = i;
  }
  EXPECT_LT(listed, down);
  EXPECT_EQ(polls, 2);
  EXPECT_FALSE(slept.empty());
  bool logged = false;
  for (const auto& line : log_)
    logged = logged || line.find("job 17 released") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST_F(PowerTest, ABudgetRefusalLeavesTheJobsHeld) {
  config_.budget_usd = 1;
  ResumeNodes(config_, offers_, {"aws-p5-48xlarge-1"}, *db_, env_);
  EXPECT_TRUE(CallsTo("squeue").empty());
  ASSERT_EQ(CallsTo("scontrol").size(), 1u);
}

TEST_F(PowerTest, AProvidersNodeAddrIsGivenToSlurm) {
  CaptureResult up;
  up.exit_code = 0;
  up.out = "instance i-123 running\nNodeAddr=10.0.3.7\n";
  answers_["aws-p5-48xlarge-1"] = up;
  ResumeNodes(config_, offers_, {"aws-p5-48xlarge-1"}, *db_, env_);
  ASSERT_EQ(CallsTo("scontrol").size(), 1u);
  EXPECT_EQ(CallsTo("scontrol")[0],
            (std::vector<std::string>{"scontrol", "update", "nodename=aws-p5-48xlarge-1",
                                      "nodeaddr=10.0.3.7", "nodehostname=aws-p5-48xlarge-1"}));
}

TEST_F(PowerTest, AnUnknownNodeIsMarkedDown) {
  auto out = ResumeNodes(config_, offers_, {"gcp-a3-1"}, *db_, env_);
  EXPECT_EQ(out[0].result, "failed");
  EXPECT_EQ(CallsTo("scontrol").size(), 1u);
  EXPECT_TRUE(CallsTo("/opt/cloud").empty());
}

TEST_F(PowerTest, SuspendEndsPerSecondBilledNodesAtOnce) {
  ResumeNodes(config_, offers_, {"aws-p5-48xlarge-1"}, *db_, env_);
  now_ += 600;
  auto out = SuspendNodes(config_, offers_, {"aws-p5-48xlarge-1"}, *db_, env_);
  EXPECT_EQ(out[0].result, "ended");
  EXPECT_EQ(CallsTo("/opt/cloud").back(),
            (std::vector<std::string>{"/opt/cloud", "down", "aws-p5-48xlarge-1"}));
  auto row = store::LatestCloudNode(*db_, "aws-p5-48xlarge-1");
  EXPECT_EQ((*row)->state, "ended");
  EXPECT_DOUBLE_EQ(store::BilledUsd(**row, now_ + 9999), 8.0 * 600 / 3600);
  EXPECT_TRUE(detached_.empty());
}

TEST_F(PowerTest, HourlyBilledNodesEndJustBeforeTheirNextHourUnlessResumed) {
  const std::vector<CloudOffer> hourly = {Offer("aws", "p5.48xlarge", 8, 3600)};
  ResumeNodes(config_, hourly, {"aws-p5-48xlarge-1"}, *db_, env_);  // at 1000
  now_ = 1000 + 600;
  auto out = SuspendNodes(config_, hourly, {"aws-p5-48xlarge-1"}, *db_, env_);
  EXPECT_EQ(out[0].result, "timer");
  ASSERT_EQ(detached_.size(), 1u);
  const auto& timer = detached_[0];
  // The hour began at 1000; end 120 s before 4600.
  EXPECT_EQ(std::vector<std::string>(timer.end() - 5, timer.end()),
            (std::vector<std::string>{"--at", "4480", "--row", "1", "aws-p5-48xlarge-1"}));
  EXPECT_EQ(CallsTo("/opt/cloud").size(), 1u) << "suspend returned without ending it";
  // Slurm wants the node again before the timer: the instance is used as it is.
  now_ = 2000;
  EXPECT_EQ(ResumeNodes(config_, hourly, {"aws-p5-48xlarge-1"}, *db_, env_)[0].result, "reused");
  now_ = 4480;
  EXPECT_EQ(EndNodeAt(config_, hourly, "aws-p5-48xlarge-1", 1, *db_, env_).result, "reused");
  EXPECT_EQ(CallsTo("/opt/cloud").size(), 1u) << "neither started again nor ended";
  // Idle again: this time the timer ends it.
  SuspendNodes(config_, hourly, {"aws-p5-48xlarge-1"}, *db_, env_);
  EXPECT_EQ(EndNodeAt(config_, hourly, "aws-p5-48xlarge-1", 1, *db_, env_).result, "ended");
  EXPECT_EQ(CallsTo("/opt/cloud").back()[1], "down");
}

TEST_F(PowerTest, ResumeFailEndsWhatTheProviderStarted) {
  ResumeNodes(config_, offers_, {"aws-p5-48xlarge-1"}, *db_, env_);
  auto out =
      ResumeFailNodes(config_, offers_, {"aws-p5-48xlarge-1", "aws-p5-48xlarge-2"}, *db_, env_);
  EXPECT_EQ(CallsTo("/opt/cloud").back()[1], "down");
  EXPECT_EQ((*store::LatestCloudNode(*db_, "aws-p5-48xlarge-1"))->state, "failed");
  EXPECT_EQ(out[1].result, "failed");
}

TEST(PowerConfTest, CloudNodesWeighedByPriceInCents) {
  CloudConf conf;
  conf.offers = {Offer("aws", "p5.48xlarge", 98.32), Offer("lambda", "gpu_8x_h100_sxm5", 23.92)};
  conf.max_nodes = 2;
  conf.resume_program = "/etc/slurm/fulcrum-slurm-resume";
  conf.suspend_program = "/etc/slurm/fulcrum-slurm-suspend";
  conf.resume_fail_program = "/etc/slurm/fulcrum-slurm-resume-fail";
  const auto lines = CloudConfLines(conf);
  const auto has = [&](const std::string& text) {
    for (const auto& l : lines) {
      if (l.find(text) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("ResumeProgram=/etc/slurm/fulcrum-slurm-resume"));
  EXPECT_TRUE(has("ResumeFailProgram=/etc/slurm/fulcrum-slurm-resume-fail"));
  EXPECT_TRUE(has("SuspendTime=300"));
  EXPECT_TRUE(has("NodeName=aws-p5-48xlarge-[1-2] State=CLOUD CPUs=192"));
  EXPECT_TRUE(has("Features=H100-SXM5-80GB Weight=9832"));
  EXPECT_TRUE(has("Weight=2392"));
  EXPECT_TRUE(has("PartitionName=cloud Nodes=aws-p5-48xlarge-[1-2],lambda-gpu-8x-h100-sxm5-[1-2]"));
  EXPECT_EQ(ProgramWrapper("/usr/bin/fulcrum", "/etc/fulcrum/s.yaml", "resume"),
            "#!/bin/sh\n# Written by fulcrum slurm conf --cloud: Slurm runs this with the node "
            "list.\nexec '/usr/bin/fulcrum' slurm resume --config '/etc/fulcrum/s.yaml' \"$@\"\n");
}

}  // namespace
}  // namespace fulcrum::cluster
