// The planning panel's launch questions (issue 25), through the real binary on the shipped
// catalog: does the exported task of the README's 7B pick start one process per GPU of the
// offer it rents, does `--export dstack` without --pick export what dstack can launch, and does
// --keep-command refuse a command that would not. Properties, not expected output: each failed
// on the binary before issue 25 (8 processes on the 3-GPU pick; exit 2 because rank 1 was not a
// dstack backend; no --keep-command).
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/plan_panel.h"
#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

RunOutput PlanExport(const std::string& tool, const std::string& file,
                     std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--catalog", SourcePath("catalog"),
                                   "plan",      SourcePath("examples/llama-7b-finetune.yaml"),
                                   "--export",  tool,
                                   file,        "--fulcrum-install",
                                   "false",     "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return RunFulcrum(args, NoUserOffers());
}

// The text after the first `prefix` in `text` up to (not including) the first of `stops`; empty
// when `prefix` is absent. (A plain scan, not std::regex: g++ 12's -O2 ASan build warns inside
// <regex> under -Werror.)
std::string After(const std::string& text, const std::string& prefix, const std::string& stops) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return "";
  const size_t from = at + prefix.size();
  return text.substr(from, text.find_first_of(stops, from) - from);
}

// The dstack backends of catalog/export_dstack.csv (its cloud rows' name column).
std::set<std::string> DstackBackends() {
  std::set<std::string> names;
  std::ifstream in(SourcePath("catalog/export_dstack.csv"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cloud,", 0) != 0) continue;
    // kind,provider,fulcrum,instance_prefix,name,...
    size_t at = 0;
    for (int i = 0; i < 4; ++i) at = line.find(',', at) + 1;
    names.insert(line.substr(at, line.find(',', at) - at));
  }
  return names;
}

// "How many processes does the exported 7B task start on the node it rents?" One per GPU of
// the picked offer: the accelerators count and torchrun's --nproc-per-node agree.
TEST(PlanPanelLaunchTest, TheReadme7bExportStartsOneProcessPerGpuOfThePick) {
  const std::string dir = MakeTempDir("panel-launch-7b");
  RunOutput r = PlanExport("skypilot", dir + "/t.yaml");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string task = FileContents(dir + "/t.yaml");
  // accelerators: "H100:3" -> "3"; torchrun --nproc-per-node 3 (or =3) -> "3".
  const std::string accelerators = After(task, "accelerators: \"", "\"");
  ASSERT_NE(accelerators.find(':'), std::string::npos) << task;
  const std::string gpus = accelerators.substr(accelerators.find(':') + 1);
  const std::string rest = After(task, "torchrun --nproc-per-node", "\n");  // " 3 train.py"
  ASSERT_FALSE(rest.empty()) << task;
  const std::string nproc = After(rest.substr(1), "", " ");  // after the ' ' or '='
  ASSERT_FALSE(gpus.empty()) << task;
  ASSERT_EQ(gpus.find_first_not_of("0123456789"), std::string::npos) << task;
  EXPECT_EQ(nproc, gpus) << task;
  if (gpus != "8") {  // the spec's command says 8: the header says what changed
    EXPECT_NE(task.find("#   --nproc-per-node 8 -> " + gpus), std::string::npos) << task;
  }
  fs::remove_all(dir);
}

// "Export my plan for dstack": without --pick, the best candidate dstack can launch, its
// header naming its rank and why the ranks before it were not exported.
TEST(PlanPanelLaunchTest, ExportDstackWithoutPickExportsTheBestCandidateDstackCanLaunch) {
  const std::string dir = MakeTempDir("panel-launch-dstack");
  RunOutput r = PlanExport("dstack", dir + "/task.yml");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json plan = json::parse(r.out);
  const json& exported = plan["export"];
  ASSERT_EQ(exported["written"].size(), 1u) << exported.dump();
  const int rank = exported["written"][0]["rank"];
  EXPECT_EQ(exported["written"][0]["file"], dir + "/task.yml");
  // Every better rank was skipped with its reason; the exported one is a dstack backend.
  ASSERT_EQ(exported["skipped"].size(), static_cast<size_t>(rank - 1)) << exported.dump();
  for (int i = 0; i < rank - 1; ++i) {
    EXPECT_EQ(exported["skipped"][i]["rank"], i + 1);
    EXPECT_FALSE(exported["skipped"][i]["reason"].get<std::string>().empty());
  }
  const std::string task = FileContents(dir + "/task.yml");
  const std::string backend = After(task, "backends: [\"", "\"");
  ASSERT_FALSE(backend.empty()) << task;
  EXPECT_TRUE(DstackBackends().count(backend)) << backend;
  EXPECT_NE(task.find("(rank " + std::to_string(rank) + ")"), std::string::npos) << task;
  if (rank > 1) {
    EXPECT_NE(task.find("# Rank " + std::to_string(rank) +
                        " is the best candidate dstack can "
                        "launch (rank 1: "),
              std::string::npos)
        << task;
  }
  fs::remove_all(dir);
}

// "Keep my command as written": a pick on which it would start the wrong number of processes
// (no offer has 1000 GPUs per node) is refused with exit 2 naming the mismatch, nothing written.
TEST(PlanPanelLaunchTest, KeepCommandRefusesAPickTheCommandDoesNotFit) {
  const std::string dir = MakeTempDir("panel-launch-keep");
  const std::vector<std::string> command = {"--command", "torchrun --nproc-per-node 1000 t.py"};
  std::vector<std::string> keep = command;
  keep.push_back("--keep-command");
  RunOutput r = PlanExport("skypilot", dir + "/t.yaml", keep);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--keep-command"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--nproc-per-node 1000 -> "), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/t.yaml"));
  // Without it the same pick is exported with the node's count, the change in its header.
  r = PlanExport("skypilot", dir + "/t.yaml", command);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(FileContents(dir + "/t.yaml").find("#   --nproc-per-node 1000 -> "), std::string::npos);
  fs::remove_all(dir);
}

// The dstack rows of catalog/export_dstack.csv: provider -> max nodes (0: no limit), and the
// (provider, region) pairs it spells.
struct DstackTable {
  std::map<std::string, int> max_nodes;
  std::set<std::pair<std::string, std::string>> regions;
};
DstackTable ReadDstackTable() {
  DstackTable t;
  std::ifstream in(SourcePath("catalog/export_dstack.csv"));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string>
        f;  // kind,provider,fulcrum,instance_prefix,name,instance_types,max_nodes
    size_t at = 0;
    for (int i = 0; i < 7 && at != std::string::npos; ++i) {
      const size_t comma = line.find(',', at);
      f.push_back(line.substr(at, comma == std::string::npos ? comma : comma - at));
      at = comma == std::string::npos ? comma : comma + 1;
    }
    if (f.size() < 7) continue;
    if (f[0] == "cloud") t.max_nodes[f[1]] = f[6].empty() ? 0 : std::stoi(f[6]);
    if (f[0] == "region") t.regions.insert({f[1], f[2]});
  }
  return t;
}

// "Plan only what dstack can start": every candidate is on a dstack backend, in a region dstack
// spells, within its node limit there, on-demand or spot; the unrestricted plan has others.
TEST(PlanPanelLaunchTest, LauncherDstackPlansOnlyWhatDstackCanStart) {
  const DstackTable table = ReadDstackTable();
  ASSERT_FALSE(table.max_nodes.empty());
  auto launchable = [&](const json& c) {
    const std::string provider = c["provider"];
    auto cloud = table.max_nodes.find(provider);
    return cloud != table.max_nodes.end() &&
           table.regions.count({provider, c["region"].get<std::string>()}) &&
           (cloud->second == 0 || c["nodes"].get<int>() <= cloud->second) &&
           (c["pricing"] == "on_demand" || c["pricing"] == "spot");
  };
  auto plan = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"--catalog", SourcePath("catalog"),
                                     "plan",      SourcePath("examples/llama-70b-pretrain.yaml"),
                                     "--top",     "100000",
                                     "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunOutput r = RunFulcrum(args, NoUserOffers());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.empty() ? json::object() : json::parse(r.out);
  };
  const json all = plan({});
  size_t others = 0;
  for (const json& c : all["candidates"]) others += launchable(c) ? 0 : 1;
  EXPECT_GT(others, 0u);
  const json only = plan({"--launcher", "dstack"});
  ASSERT_FALSE(only["candidates"].empty());
  for (const json& c : only["candidates"]) {
    EXPECT_TRUE(launchable(c)) << c["provider"] << " " << c["region"] << " " << c["nodes"];
  }
}

// "Our cluster runs Slurm": --launcher slurm plans what an sbatch script can start (every offer,
// any node count, on-demand, reserved or spot) but not spot_with_fallback, which a batch job
// cannot switch to on-demand capacity; --export slurm writes the pick as a batch script.
// Before issue 25's Slurm launcher, both were exit 2.
TEST(PlanPanelLaunchTest, LauncherSlurmPlansWhatABatchScriptCanStart) {
  const std::string dir = MakeTempDir("panel-launch-slurm");
  RunOutput r =
      RunFulcrum({"--catalog", SourcePath("catalog"), "plan",
                  SourcePath("examples/llama-70b-pretrain.yaml"), "--top", "100000", "--json",
                  "--pricing", "on_demand,reserved_3y,spot_with_fallback", "--launcher", "slurm",
                  "--export", "slurm", dir + "/job.sbatch", "--fulcrum-install", "false"},
                 NoUserOffers());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json d = json::parse(r.out);
  ASSERT_FALSE(d["candidates"].empty());
  std::set<std::string> pricing;
  for (const json& c : d["candidates"]) pricing.insert(c["pricing"].get<std::string>());
  EXPECT_EQ(pricing.count("spot_with_fallback"), 0u);
  EXPECT_EQ(pricing.count("on_demand"), 1u);
  EXPECT_EQ(pricing.count("reserved_3y"), 1u) << "Slurm runs on reserved nodes too";
  ASSERT_EQ(d["export"]["written"].size(), 1u) << r.out.substr(0, 300);
  const std::string script = FileContents(dir + "/job.sbatch");
  const json& top = d["candidates"][0];
  EXPECT_NE(script.find("#SBATCH --nodes=" + std::to_string(top["nodes"].get<int>()) + "\n"),
            std::string::npos)
      << script;
  EXPECT_NE(
      script.find("#SBATCH --gres=gpu:" + std::to_string(top["gpus_per_node"].get<int>()) + "\n"),
      std::string::npos)
      << script;
  RunOutput refused =
      RunFulcrum({"--catalog", SourcePath("catalog"), "plan",
                  SourcePath("examples/llama-70b-pretrain.yaml"), "--launcher", "slurn"},
                 NoUserOffers());
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("skypilot, dstack or slurm"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace fulcrum::testing
