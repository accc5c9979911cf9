#include "plan/export.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

namespace fulcrum::plan {
namespace {

// Offers in the spellings the shipped catalog uses (imported from SkyPilot's vms.csv files).
catalog::Catalog TestCatalog() {
  catalog::CatalogFiles files;
  files.gpus = {"gpus.csv",
                "name,vendor,architecture,aliases,memory_gib,memory_bandwidth_gbps,fp32_tflops,"
                "tf32_tflops,bf16_tflops,fp16_tflops,fp8_tflops,nvlink_gbps,pcie_gen,tdp_watts,"
                "source\n"
                "H100-SXM5-80GB,NVIDIA,Hopper,H100;H100-SXM,80,3350,67,494.5,989,989,1979,900,,"
                "700,s\n"
                "RTX-4090,NVIDIA,Ada,RTX4090;4090,24,1008,82.6,82.6,165,165,,,4,450,s\n"
                "A100-SXM4-40GB,NVIDIA,Ampere,A100,40,1555,19.5,156,312,312,,600,,400,s\n"};
  files.providers = {"providers.csv",
                     "provider,display_name,reserved_1y_discount_pct,source\n"
                     "gcp,GCP,30,s\nrunpod,RunPod,,s\nvast,Vast,,s\nhyperstack,Hyperstack,,s\n"};
  files.offers = {"offers.csv",
                  "provider,instance_type,region,gpu,gpu_count,on_demand_per_hour,spot_per_hour,"
                  "source\n"
                  "gcp,a3-megagpu-8g,us-central1,H100-SXM5-80GB,8,28.17,10,s\n"      // 0
                  "gcp,a3-highgpu-8g,us-central1,H100-SXM5-80GB,8,26.83,9,s\n"       // 1
                  "runpod,2x_RTX4090_SECURE,US,RTX-4090,2,0.98,,s\n"                 // 2
                  "vast,1x-RTX_4090-32-65536,\"Texas, US, NA\",RTX-4090,1,0.4,,s\n"  // 3
                  "hyperstack,n3-H100x8,CANADA-1,H100-SXM5-80GB,8,19,,s\n"           // 4
                  "gcp,a2-highgpu-8g,europe-west4,A100-SXM4-40GB,8,29,,s\n"};        // 5
  Result<catalog::Catalog> c = catalog::Catalog::FromFiles(files);
  if (!c.ok()) {
    ADD_FAILURE() << c.status().message();
    return catalog::Catalog();
  }
  return *c;
}

ExportTables Tables(ExportFormat format) {
  Result<ExportTables> t = LoadExportTables(std::string(FULCRUM_SOURCE_DIR) + "/catalog", format);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return *t;
}

Candidate MakeCandidate(int offer, int nodes, PricingModel pricing, int rank) {
  Candidate c;
  c.offer = offer;
  c.nodes = nodes;
  c.pricing = pricing;
  c.rank = rank;
  c.run.checkpoint_interval_seconds = 1799.2;
  c.run.total_seconds = 3600;
  return c;
}

PlanResult Plan(std::vector<Candidate> candidates) {
  PlanResult r;
  r.model.name = "Llama 2/7B";
  r.spec.command = "python train.py --lr 3e-4";
  r.spec.constraints.budget_usd = 500;
  r.candidates = std::move(candidates);
  return r;
}

ExportOptions Options() {
  ExportOptions o;
  o.fulcrum_install = "sudo apt-get install -y ./fulcrum.deb";
  return o;
}

std::string ExportOne(const PlanResult& r, ExportFormat format, int pick) {
  Result<ExportResult> e = ExportCandidates(r, TestCatalog(), Tables(format), Options(), {pick});
  EXPECT_TRUE(e.ok()) << e.status().message();
  if (!e.ok() || e->tasks.size() != 1) {
    ADD_FAILURE() << "rank " << pick << " not exported: "
                  << (e.ok() && !e->skipped.empty() ? e->skipped[0].reason : "");
    return "";
  }
  return e->tasks[0].text;
}

TEST(ExportTest, GcpA3MegaIsSkyPilotsH100Mega) {
  // Issue 14: the "shortest alias" rule gave H100 for a3-megagpu-8g.
  const ExportTables sky = Tables(ExportFormat::kSkypilot);
  EXPECT_EQ(ExportAcceleratorName(sky, "gcp", "H100-SXM5-80GB", "a3-megagpu-8g"), "H100-MEGA");
  EXPECT_EQ(ExportAcceleratorName(sky, "gcp", "H100-SXM5-80GB", "a3-highgpu-8g"), "H100");
  // RunPod's and Lambda's own names, not fulcrum's aliases (H100-PCIE, A100-80G-PCIE, RTX-4090).
  EXPECT_EQ(ExportAcceleratorName(sky, "runpod", "H100-PCIe-80GB", "1x_H100_SECURE"), "H100");
  EXPECT_EQ(ExportAcceleratorName(sky, "runpod", "A100-PCIe-80GB", "1x_A100-80GB_SECURE"),
            "A100-80GB");
  EXPECT_EQ(ExportAcceleratorName(sky, "runpod", "RTX-4090", "2x_RTX4090_SECURE"), "RTX4090");
  EXPECT_EQ(ExportAcceleratorName(sky, "lambda", "H100-PCIe-80GB", "gpu_1x_h100_pcie"), "H100");
  EXPECT_EQ(ExportAcceleratorName(sky, "hyperstack", "H100-SXM5-80GB", "n3-H100x8"), "");
  const ExportTables dstack = Tables(ExportFormat::kDstack);
  EXPECT_EQ(ExportAcceleratorName(dstack, "aws", "A100-SXM4-80GB", "p4de.24xlarge"), "A100:80GB");
}

TEST(ExportTest, SkypilotValuesAreQuotedAndTheRunLineIsComplete) {
  const PlanResult r = Plan({MakeCandidate(0, 2, PricingModel::kSpot, 1),
                             MakeCandidate(2, 1, PricingModel::kOnDemand, 2)});
  const std::string mega = ExportOne(r, ExportFormat::kSkypilot, 1);
  EXPECT_NE(mega.find("  cloud: \"gcp\"\n"), std::string::npos) << mega;
  EXPECT_NE(mega.find("  accelerators: \"H100-MEGA:8\"\n"), std::string::npos) << mega;
  EXPECT_NE(mega.find("  use_spot: true\n"), std::string::npos) << mega;
  EXPECT_NE(mega.find("num_nodes: 2\n"), std::string::npos) << mega;
  // Everything `fulcrum run` needs: name, checkpoint dir and interval, the cluster's price
  // (2 nodes x the spot price 10), the budget; then the user's command (a `python SCRIPT` on
  // 8 GPUs x 2 nodes under torchrun, one process per GPU).
  EXPECT_NE(mega.find("  fulcrum run --name fulcrum-llama-2-7b --checkpoint-dir checkpoints "
                      "--checkpoint-every 1800s --price-per-hour 20 --budget-usd 500 -- torchrun "
                      "--nproc_per_node=8 --nnodes="),
            std::string::npos)
      << mega;
  EXPECT_NE(mega.find("setup: |\n  command -v fulcrum >/dev/null 2>&1 || { sudo apt-get install "
                      "-y ./fulcrum.deb; } || echo"),
            std::string::npos)
      << mega;
  // YAML 1.1 reads an unquoted 4090:2 as a base-60 integer.
  const std::string rtx = ExportOne(r, ExportFormat::kSkypilot, 2);
  EXPECT_NE(rtx.find("  accelerators: \"RTX4090:2\"\n"), std::string::npos) << rtx;
  EXPECT_NE(rtx.find("  region: \"US\"\n"), std::string::npos) << rtx;
}

// Each node of a multi-node task starts the run line once (SkyPilot
// docs/source/running-jobs/distributed-jobs.rst; dstack examples/distributed-training/torchrun),
// so a torchrun gets what it needs to join the others; what the user set stays theirs.
TEST(ExportTest, MultiNodeTorchrunGetsTheToolsNodeEnvironment) {
  auto run_line = [](const std::string& command, int nodes, ExportFormat format) {
    PlanResult r = Plan({MakeCandidate(0, nodes, PricingModel::kSpot, 1)});
    r.spec.command = command;
    const std::string task = ExportOne(r, format, 1);
    const size_t at = task.find(" -- ");
    return at == std::string::npos ? task : task.substr(at + 4, task.find('\n', at) - at - 4);
  };
  EXPECT_EQ(run_line("torchrun --nproc-per-node 8 train.py", 2, ExportFormat::kSkypilot),
            "torchrun --nnodes=\"$SKYPILOT_NUM_NODES\" --node_rank=\"$SKYPILOT_NODE_RANK\" "
            "--master_addr=\"$(echo \"$SKYPILOT_NODE_IPS\" | head -n1)\" --master_port=8008 "
            "--nproc-per-node 8 train.py");
  // Without --nproc-per-node torchrun starts one process: one per GPU of the node (the offer's
  // 8) instead.
  // (dstack's run line is a JSON-quoted YAML scalar.)
  EXPECT_EQ(
      run_line("/opt/venv/bin/python -m torch.distributed.run train.py", 2, ExportFormat::kDstack),
      "/opt/venv/bin/python -m torch.distributed.run "
      "--nproc_per_node=8 --nnodes=\\\"$DSTACK_NODES_NUM\\\" "
      "--node_rank=\\\"$DSTACK_NODE_RANK\\\" --master_addr=\\\"$DSTACK_MASTER_NODE_IP\\\" "
      "--master_port=8008 train.py\"");
  // One node, the user's own rendezvous (--standalone, --rdzv_endpoint, --master-addr) and
  // their --nnodes / --master_port are left alone.
  EXPECT_EQ(run_line("torchrun --nproc-per-node 8 train.py", 1, ExportFormat::kSkypilot),
            "torchrun --nproc-per-node 8 train.py");
  EXPECT_EQ(run_line("torchrun --nproc_per_node=8 --nnodes=2 --rdzv_endpoint=h:29400 t.py", 2,
                     ExportFormat::kSkypilot),
            "torchrun --nproc_per_node=8 --nnodes=2 --rdzv_endpoint=h:29400 t.py");
  EXPECT_EQ(
      run_line("torchrun --nproc-per-node 8 --master-port 29500 t.py", 2, ExportFormat::kSkypilot),
      "torchrun --nnodes=\"$SKYPILOT_NUM_NODES\" --node_rank=\"$SKYPILOT_NODE_RANK\" "
      "--master_addr=\"$(echo \"$SKYPILOT_NODE_IPS\" | head -n1)\" --nproc-per-node 8 "
      "--master-port 29500 t.py");
  // A plain `python SCRIPT` starts one process: on 8 GPUs x 2 nodes it runs under torchrun.
  EXPECT_EQ(run_line("python train.py --lr 3e-4", 2, ExportFormat::kSkypilot),
            "torchrun --nproc_per_node=8 --nnodes=\"$SKYPILOT_NUM_NODES\" "
            "--node_rank=\"$SKYPILOT_NODE_RANK\" --master_addr=\"$(echo \"$SKYPILOT_NODE_IPS\" | "
            "head -n1)\" --master_port=8008 train.py --lr 3e-4");
  // Another program is left as written; the header says what it must do.
  PlanResult r = Plan({MakeCandidate(0, 2, PricingModel::kSpot, 1)});
  r.spec.command = "bash train.sh --lr 3e-4";
  const std::string task = ExportOne(r, ExportFormat::kSkypilot, 1);
  EXPECT_NE(task.find("-- bash train.sh --lr 3e-4\n"), std::string::npos) << task;
  EXPECT_NE(task.find("it must start 8 processes, one per GPU, itself"), std::string::npos) << task;
  EXPECT_NE(task.find("# The command runs once on each of the 2 nodes: it must join the others "
                      "itself ($SKYPILOT_NODE_RANK, $SKYPILOT_NODE_IPS).\n"),
            std::string::npos)
      << task;
  r.candidates[0].nodes = 1;
  EXPECT_EQ(ExportOne(r, ExportFormat::kSkypilot, 1).find("must join the others"),
            std::string::npos);
}

// A pick whose script takes its layout in a way fulcrum does not write (`nemo llm`, a NeMo script
// outside examples/, Megatron-DeepSpeed's config, an unknown `torchrun train.py`, a framework the
// script's dialect cannot express) is exported as the user wrote it, and the header says which
// framework and layout to give it; a Megatron-LM entry point gets its arguments and no such line.
TEST(ExportTest, AMegatronPickWhoseLayoutIsNotWrittenSaysSo) {
  PlanResult r = Plan({MakeCandidate(0, 1, PricingModel::kSpot, 1)});
  workload::Training& t = r.candidates[0].layout.training;
  t.framework = workload::Framework::kMegatron;
  t.tp = 2, t.pp = 4, t.dp = 1, t.global_batch = 64;
  r.model.layers = 32;
  r.spec.command = "nemo llm pretrain --factory llama3_8b";
  const std::string said = "fulcrum does not know how this command's script takes its layout";
  std::string task = ExportOne(r, ExportFormat::kSkypilot, 1);
  EXPECT_NE(task.find(said), std::string::npos) << task;
  EXPECT_NE(task.find("global batch 64 yourself"), std::string::npos) << task;
  r.layout_arguments = LayoutArguments::kMegatronLm;
  r.spec.command = "torchrun --nproc-per-node 8 pretrain_gpt.py";
  task = ExportOne(r, ExportFormat::kSkypilot, 1);
  EXPECT_EQ(task.find(said), std::string::npos) << task;
  EXPECT_NE(task.find("--tensor-model-parallel-size 2"), std::string::npos) << task;
  t.framework = workload::Framework::kFsdp;
  t.tp = t.pp = 1;
  t.dp = 8, t.zero_stage = 2, t.micro_batch = 2;
  EXPECT_NE(ExportOne(r, ExportFormat::kSkypilot, 1).find(said), std::string::npos);
  // The README example's shape: an unknown script planned as FSDP ZeRO-2 at micro-batch 2.
  r.layout_arguments = LayoutArguments::kNone;
  r.spec.command = "torchrun --nproc-per-node 8 train.py --config finetune.yaml";
  task = ExportOne(r, ExportFormat::kSkypilot, 1);
  EXPECT_NE(task.find(said + ": give it fsdp "), std::string::npos) << task;
  EXPECT_NE(task.find("(4 accumulation step(s) of micro-batch 2)"), std::string::npos) << task;
}

// 3 x 28.17 is 84.50999999999999 in binary floating point: the run line says 84.51.
TEST(ExportTest, TheClustersPriceIsWrittenWithoutFloatingPointNoise) {
  const PlanResult r = Plan({MakeCandidate(0, 3, PricingModel::kOnDemand, 1)});
  const std::string task = ExportOne(r, ExportFormat::kSkypilot, 1);
  EXPECT_NE(task.find(" --price-per-hour 84.51 "), std::string::npos) << task;
}

TEST(ExportTest, DstackUsesItsBackendAndRegionSpellings) {
  const PlanResult r = Plan({MakeCandidate(3, 1, PricingModel::kOnDemand, 1),
                             MakeCandidate(1, 1, PricingModel::kSpot, 2)});
  const std::string vast = ExportOne(r, ExportFormat::kDstack, 1);
  EXPECT_NE(vast.find("backends: [\"vastai\"]\n"), std::string::npos) << vast;
  EXPECT_NE(vast.find("regions: [\"us-texas\"]\n"), std::string::npos) << vast;
  EXPECT_EQ(vast.find("instance_types:"), std::string::npos) << vast;  // vastai: offer ids
  EXPECT_NE(vast.find("  gpu: \"RTX4090:24GB:1\"\n"), std::string::npos) << vast;
  EXPECT_NE(vast.find("spot_policy: \"on-demand\"\n"), std::string::npos) << vast;
  const std::string gcp = ExportOne(r, ExportFormat::kDstack, 2);
  EXPECT_NE(gcp.find("instance_types: [\"a3-highgpu-8g\"]\n"), std::string::npos) << gcp;
  EXPECT_NE(gcp.find("spot_policy: \"spot\"\n"), std::string::npos) << gcp;
  EXPECT_NE(gcp.find("  - \"fulcrum run --name fulcrum-llama-2-7b "), std::string::npos) << gcp;
}

TEST(ExportTest, OffersTheToolCannotExpressAreSkippedWithTheReason) {
  const PlanResult r = Plan({MakeCandidate(4, 1, PricingModel::kOnDemand, 1),
                             MakeCandidate(1, 1, PricingModel::kReserved1y, 2),
                             MakeCandidate(5, 1, PricingModel::kOnDemand, 3),
                             MakeCandidate(1, 1, PricingModel::kOnDemand, 4)});
  Result<ExportResult> e =
      ExportCandidates(r, TestCatalog(), Tables(ExportFormat::kSkypilot), Options(), {});
  ASSERT_TRUE(e.ok()) << e.status().message();
  ASSERT_EQ(e->tasks.size(), 1u);
  EXPECT_EQ(e->tasks[0].rank, 4);
  ASSERT_EQ(e->skipped.size(), 3u);
  EXPECT_EQ(e->skipped[0].rank, 1);
  EXPECT_NE(e->skipped[0].reason.find("provider hyperstack: not a SkyPilot cloud"),
            std::string::npos)
      << e->skipped[0].reason;
  EXPECT_NE(e->skipped[1].reason.find("reserved_1y pricing"), std::string::npos);
  EXPECT_NE(e->skipped[2].reason.find("region \"europe-west4\" of gcp"), std::string::npos)
      << e->skipped[2].reason;
  const nlohmann::json j = ExportJson(*e, {"task-4.yaml"});
  EXPECT_EQ(j["written"][0]["file"], "task-4.yaml");
  EXPECT_EQ(j["skipped"][1]["rank"], 2);
  // A picked candidate the tool cannot launch is an input error; dstack has no hyperstack
  // backend either.
  e = ExportCandidates(r, TestCatalog(), Tables(ExportFormat::kDstack), Options(), {1});
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(e.status().message().find("provider hyperstack: not a dstack backend"),
            std::string::npos)
      << e.status().message();
  // SkyPilot runs one node per task on RunPod; AWS takes several.
  const PlanResult multi = Plan({MakeCandidate(2, 2, PricingModel::kOnDemand, 1)});
  e = ExportCandidates(multi, TestCatalog(), Tables(ExportFormat::kSkypilot), Options(), {});
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->skipped.size(), 1u);
  EXPECT_NE(e->skipped[0].reason.find("2 nodes on runpod: SkyPilot runs at most 1 node(s)"),
            std::string::npos)
      << e->skipped[0].reason;
  // A rank outside the plan is an input error.
  e = ExportCandidates(r, TestCatalog(), Tables(ExportFormat::kDstack), Options(), {5});
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidInput);
}

TEST(ExportTest, SlurmRunsEveryOfferButCannotFallBackToOnDemand) {
  // Issue 25: --launcher slurm / --export slurm were refused. A batch script asks for N nodes of
  // the offer's shape; hyperstack (no SkyPilot or dstack spelling) and reserved capacity are
  // fine, a deadline-driven move to on-demand is not.
  PlanResult r = Plan({MakeCandidate(4, 2, PricingModel::kOnDemand, 1),
                       MakeCandidate(1, 1, PricingModel::kReserved1y, 2),
                       MakeCandidate(1, 1, PricingModel::kSpotWithFallback, 3)});
  r.spec.command = "accelerate launch --num_processes 8 train.py --nodes $NUM_NODES";
  Result<ExportResult> e =
      ExportCandidates(r, TestCatalog(), Tables(ExportFormat::kSlurm), Options(), {});
  ASSERT_TRUE(e.ok()) << e.status().message();
  ASSERT_EQ(e->tasks.size(), 2u);
  ASSERT_EQ(e->skipped.size(), 1u);
  EXPECT_EQ(e->skipped[0].rank, 3);
  EXPECT_NE(e->skipped[0].reason.find("spot_with_fallback pricing"), std::string::npos);
  ASSERT_TRUE(e->tasks[0].slurm.has_value());
  const SlurmTask& t = *e->tasks[0].slurm;
  EXPECT_EQ(t.nodes, 2);
  EXPECT_EQ(t.gpus_per_node, 8);
  EXPECT_EQ(t.node_command,
            "export NUM_NODES=\"$SLURM_JOB_NUM_NODES\"\n"
            "exec accelerate launch --num_machines=\"$SLURM_JOB_NUM_NODES\" "
            "--machine_rank=\"$SLURM_NODEID\" --main_process_ip=\"$MASTER_ADDR\" "
            "--main_process_port=\"$MASTER_PORT\" --num_processes 16 train.py --nodes $NUM_NODES");
  const std::vector<std::string> price = {"--price-per-hour", "38"};  // 2 x 19
  EXPECT_NE(std::search(t.run_args.begin(), t.run_args.end(), price.begin(), price.end()),
            t.run_args.end());
  EXPECT_NE(t.header.find("--num_processes 8 -> 16"), std::string::npos) << t.header;
  EXPECT_FALSE(t.setup.empty());
  // --launcher slurm keeps every offer, in every pricing model but spot_with_fallback.
  const LauncherFilter filter = LauncherFilterOf(Tables(ExportFormat::kSlurm));
  EXPECT_EQ(filter.name, "Slurm");
  const catalog::Catalog catalog = TestCatalog();
  for (const catalog::Offer& o : catalog.offers()) {
    ASSERT_TRUE(filter.max_nodes(o).has_value()) << o.provider;
    EXPECT_FALSE(filter.max_nodes(o)->has_value()) << o.provider;
  }
  EXPECT_EQ(filter.pricing.size(), static_cast<size_t>(kPricingModelCount - 1));
  EXPECT_EQ(
      std::count(filter.pricing.begin(), filter.pricing.end(), PricingModel::kSpotWithFallback), 0);
}

TEST(ExportTest, AModelNameCannotEndTheHeaderComment) {
  PlanResult r = Plan({MakeCandidate(1, 1, PricingModel::kOnDemand, 1)});
  r.model.name = "evil\nresources: {cloud: aws}\r";
  const std::string text = ExportOne(r, ExportFormat::kSkypilot, 1);
  EXPECT_NE(text.find("\n# resources: {cloud: aws}  (rank 1)"), std::string::npos) << text;
  EXPECT_NE(text.find("\nname: \"fulcrum-evil-resources-cloud-aws\"\n"), std::string::npos) << text;
}

TEST(ExportTest, EveryCandidateGoesToItsOwnFile) {
  EXPECT_EQ(ExportFileName("out/task.yaml", 3, true), "out/task-3.yaml");
  EXPECT_EQ(ExportFileName("out.d/task", 3, true), "out.d/task-3");
  EXPECT_EQ(ExportFileName("out/task.yaml", 3, false), "out/task.yaml");
}

TEST(ExportTest, RefusesWhenNothingWouldInstallFulcrum) {
  ExportOptions o;
  Status s = ValidateExportOptions(o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("--fulcrum-install"), std::string::npos);
  o.fulcrum_install = "true";
  EXPECT_TRUE(ValidateExportOptions(o).ok());
  o.checkpoint_dir = "ck pt;rm -rf x";
  s = ValidateExportOptions(o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("--checkpoint-dir"), std::string::npos);
}

TEST(ExportTest, BadTableRowsNameFileLineAndColumn) {
  Result<ExportTables> t =
      ParseExportTables("kind,provider,fulcrum,instance_prefix,name,source\nclouds,aws,,,aws,s\n",
                        "t.csv", ExportFormat::kSkypilot);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("t.csv:2: kind"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("cloud"), std::string::npos);
  t = ParseExportTables(
      "kind,provider,fulcrum,instance_prefix,name,source\nregion,aws,x,,x,s\nregion,aws,x,,y,s\n",
      "t.csv", ExportFormat::kSkypilot);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("t.csv:3"), std::string::npos) << t.status().message();
}

// The shipped tables hold only names the tools know.
// SkyPilot accelerators: `sky show-gpus -a` as printed in skypilot-org/skypilot
// @1c9d60bdd0c6b63c61a181bec951746c6a17de97 docs/source/compute/show-gpus-all.txt (COMMON_GPU
// and OTHER_GPU), plus B300 (sky/catalog/data_fetchers/fetch_verda.py @0d3f784).
// SkyPilot clouds: the modules of sky/clouds/ (aws.py, gcp.py, azure.py, lambda_cloud.py,
// nebius.py, runpod.py, vast.py, hyperbolic.py, verda.py; commits in the table's source column).
// dstack backends: BackendType, dstackai/dstack@511c318 core/models/backends/base.py.
// dstack GPU names and memory: KNOWN_NVIDIA_GPUS, dstackai/gpuhunt@3584151 constraints.py.
TEST(ExportTest, ShippedTablesUseOnlyTheToolsNames) {
  const std::set<std::string> sky_accelerators = {
      "A10",       "A10G",        "A100",        "A100-80GB", "H100",      "H200",
      "L4",        "L40S",        "T4",          "V100",      "V100-32GB", "A100-80GB-SXM",
      "A40",       "A4000",       "A6000",       "A800",      "B200",      "GH200",
      "H100-MEGA", "H100-NVL",    "H100-NVLINK", "H100-SXM",  "L40",       "RTX3090",
      "RTX4090",   "RTX6000-Ada", "RTXA4000",    "RTXA6000",  "B300"};
  const std::set<std::string> sky_clouds = {"aws",    "gcp",  "azure",      "lambda", "nebius",
                                            "runpod", "vast", "hyperbolic", "verda"};
  const ExportTables sky = Tables(ExportFormat::kSkypilot);
  for (const auto& a : sky.accelerators) EXPECT_TRUE(sky_accelerators.count(a.name)) << a.name;
  for (const auto& [provider, cloud] : sky.clouds) {
    EXPECT_TRUE(sky_clouds.count(cloud.name)) << cloud.name;
  }
  EXPECT_FALSE(sky.clouds.count("hyperstack"));
  const std::set<std::string> dstack_backends = {"aws",    "azure",  "gcp",    "lambda",
                                                 "nebius", "runpod", "vastai", "verda"};
  const std::set<std::string> dstack_gpus = {
      "A10:24GB",     "A10G:24GB",    "A40:48GB",     "A100:40GB",  "A100:80GB",
      "A6000:48GB",   "H100:80GB",    "H100NVL:94GB", "H200:141GB", "B200:180GB",
      "B300:270GB",   "GH200:96GB",   "L4:24GB",      "L40:48GB",   "L40S:48GB",
      "RTX3090:24GB", "RTX4090:24GB", "T4:16GB",      "V100:16GB",  "V100:32GB"};
  const ExportTables dstack = Tables(ExportFormat::kDstack);
  for (const auto& a : dstack.accelerators) EXPECT_TRUE(dstack_gpus.count(a.name)) << a.name;
  for (const auto& [provider, cloud] : dstack.clouds) {
    EXPECT_TRUE(dstack_backends.count(cloud.name)) << cloud.name;
  }
  EXPECT_EQ(dstack.clouds.at("vast").name, "vastai");
  EXPECT_FALSE(dstack.clouds.count("hyperbolic"));
}

}  // namespace
}  // namespace fulcrum::plan
