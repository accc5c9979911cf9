#include "cluster/slurm.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/run_binary.h"

extern char** environ;

namespace fulcrum::cluster {
namespace {
namespace fs = std::filesystem;

TEST(SlurmTest, ShellQuoteSurvivesQuotesAndSpaces) {
  EXPECT_EQ(ShellQuote("abc"), "'abc'");
  EXPECT_EQ(ShellQuote("it's a test"), "'it'\\''s a test'");
  EXPECT_EQ(ShellQuote("$(rm -rf /)"), "'$(rm -rf /)'");
}

SbatchSpec TwoNodeSpec() {
  SbatchSpec spec;
  spec.job_name = "llama";
  spec.nodes = 2;
  spec.gpus_per_node = 8;
  spec.partition = "gpu";
  spec.fulcrum_binary = "/opt/fulcrum/bin/fulcrum";
  spec.run_args = {"--name", "llama", "--checkpoint-dir", "/shared/ckpt"};
  spec.command = {"torchrun", "--nproc-per-node", "8", "train.py", "--note", "it's"};
  return spec;
}

TEST(SlurmTest, ScriptRequestsGpusRequeueAndNoticeAndRunsUnderFulcrum) {
  SbatchSpec spec = TwoNodeSpec();
  std::string script = GenerateSbatch(spec);
  for (const char* line : {"#!/bin/bash\n", "#SBATCH --nodes=2\n", "#SBATCH --gres=gpu:8\n",
                           "#SBATCH --partition=gpu\n", "#SBATCH --requeue\n",
                           "#SBATCH --signal=B:USR1@120\n", "export FULCRUM_QUEUE=slurm\n"}) {
    EXPECT_NE(script.find(line), std::string::npos) << line << " missing in\n" << script;
  }
  EXPECT_NE(script.find("trap 'kill -USR1 $pid' USR1"), std::string::npos);
  EXPECT_NE(script.find("trap 'kill -TERM $pid' TERM"), std::string::npos);
  EXPECT_NE(script.find("scontrol requeue"), std::string::npos);
  spec.nodes = 1;
  spec.gpus_per_node = 0;
  script = GenerateSbatch(spec);
  EXPECT_EQ(script.find("--gres"), std::string::npos);
  EXPECT_EQ(script.find("srun"), std::string::npos) << "one node: no srun";
  EXPECT_EQ(script.find("--rdzv"), std::string::npos) << "one node: torchrun as given";
  EXPECT_NE(script.find("-- 'torchrun' '--nproc-per-node' '8' 'train.py' '--note' 'it'\\''s')"),
            std::string::npos)
      << "no GPU count: the command as given: " << script;
  spec.gpus_per_node = 4;
  script = GenerateSbatch(spec);
  EXPECT_NE(script.find("-- 'torchrun' '--nproc-per-node' 4 'train.py'"), std::string::npos)
      << "one process per GPU of the node: " << script;
  EXPECT_NE(script.find("#   --nproc-per-node 8 -> 4 (one process per GPU"), std::string::npos)
      << script;
}

TEST(SlurmTest, PassesSbatchOptionsUnderTheirSbatchNames) {
  SbatchSpec spec = TwoNodeSpec();
  spec.account = "ml-team";
  spec.qos = "high";
  spec.constraint = "h100&ib";
  spec.mem = "64G";
  spec.time_limit = "24:00:00";
  spec.exclusive = true;
  const std::string script = GenerateSbatch(spec);
  for (const char* line :
       {"#SBATCH --account=ml-team\n", "#SBATCH --qos=high\n", "#SBATCH --constraint=h100&ib\n",
        "#SBATCH --mem=64G\n", "#SBATCH --time=24:00:00\n", "#SBATCH --exclusive\n"}) {
    EXPECT_NE(script.find(line), std::string::npos) << line << " missing in\n" << script;
  }
  EXPECT_EQ(GenerateSbatch(TwoNodeSpec()).find("--exclusive"), std::string::npos);
  EXPECT_EQ(GenerateSbatch(TwoNodeSpec()).find("--account"), std::string::npos);
}

TEST(SlurmTest, RejectsPassthroughValuesThatWouldBreakTheScript) {
  EXPECT_TRUE(CheckSbatchValue("--qos", "").ok());
  EXPECT_TRUE(CheckSbatchValue("--constraint", "[rack1|rack2]&ib").ok());
  Status s = CheckSbatchValue("--account", "a\n#SBATCH --uid=0");
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("--account"), std::string::npos) << s.message();
  EXPECT_EQ(CheckSbatchValue("--mem", "64 G").code(), StatusCode::kInvalidInput);
}

TEST(SlurmTest, MultiNodeTorchrunIsOneJobWithARendezvousOnTheFirstHost) {
  const std::string script = GenerateSbatch(TwoNodeSpec());
  EXPECT_NE(script.find("head=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("export MASTER_ADDR=\"$head\" MASTER_PORT=29400\n"), std::string::npos);
  EXPECT_NE(script.find("-- srun --ntasks-per-node=1 --kill-on-bad-exit=1 'torchrun' --nnodes "
                        "\"$SLURM_JOB_NUM_NODES\" --rdzv-backend c10d --rdzv-endpoint "
                        "\"$MASTER_ADDR:29400\" --rdzv-id \"$SLURM_JOB_ID\" '--nproc-per-node' "
                        "'8' 'train.py' '--note' 'it'\\''s')"),
            std::string::npos)
      << script;
  // One fulcrum run (one supervisor) in the script, srun inside it.
  EXPECT_LT(script.find("' run '"), script.find(" srun "));
  EXPECT_EQ(script.find("srun", script.find(" srun ") + 5), std::string::npos);
}

TEST(SlurmTest, TorchrunSpelledAsAModuleGetsTheRendezvousToo) {
  SbatchSpec spec = TwoNodeSpec();
  spec.command = {"/usr/bin/python3", "-m", "torch.distributed.run", "train.py"};
  const std::string script = GenerateSbatch(spec);
  EXPECT_NE(script.find("'/usr/bin/python3' '-m' 'torch.distributed.run' --nproc_per_node=8 "
                        "--nnodes \"$SLURM_JOB_NUM_NODES\" --rdzv-backend c10d"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("#   added --nproc_per_node=8 (one process per GPU"), std::string::npos)
      << "the change is stated in the header: " << script;
}

TEST(SlurmTest, KeepsTheUsersOwnRendezvousAndLaunchers) {
  SbatchSpec spec = TwoNodeSpec();
  spec.command = {"torchrun", "--nnodes=2", "--rdzv_endpoint", "db1:1234", "train.py"};
  std::string script = GenerateSbatch(spec);
  EXPECT_EQ(script.find("\"$SLURM_JOB_NUM_NODES\""), std::string::npos) << script;
  EXPECT_EQ(script.find("--rdzv-backend"), std::string::npos) << script;
  spec.command = {"torchrun", "--master-addr", "db1", "train.py"};
  script = GenerateSbatch(spec);
  EXPECT_NE(script.find("--nnodes=\"$SLURM_JOB_NUM_NODES\" '--master-addr' 'db1'"),
            std::string::npos)
      << "a static rendezvous keeps its own, and still gets --nnodes: " << script;
  spec.command = {"accelerate", "launch", "train.py"};
  script = GenerateSbatch(spec);
  // The node's rank is known on the node only: the words go through a shell there.
  EXPECT_NE(script.find("srun --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c 'exec "
                        "'\\''accelerate'\\'' '\\''launch'\\''"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("--machine_rank=\"$SLURM_NODEID\""), std::string::npos) << script;
  EXPECT_NE(script.find("export MASTER_ADDR=\"$head\" MASTER_PORT=29400"), std::string::npos);
  EXPECT_EQ(script.find("--rdzv"), std::string::npos);
  EXPECT_FALSE(IsTorchrun({"accelerate", "launch"}));
  EXPECT_TRUE(IsTorchrun({"/opt/venv/bin/torchrun", "x.py"}));
}

TEST(SlurmTest, ReadsKillWaitFromShowConfig) {
  EXPECT_EQ(ParseKillWaitSeconds("JobRequeue              = 1\nKillWait                = 30 sec\n"
                                 "KillOnBadExit           = 0\n"),
            30.0);
  EXPECT_EQ(ParseKillWaitSeconds("KillWait = 5 sec"), 5.0);
  EXPECT_EQ(ParseKillWaitSeconds("KillOnBadExit = 0\n"), std::nullopt);
  EXPECT_EQ(ParseKillWaitSeconds("KillWait = soon\n"), std::nullopt);
}

TEST(SlurmTest, StopFitsInsideKillWait) {
  for (double kill_wait : {2.0, 5.0, 30.0, 120.0}) {
    StopBudget b = StopBudgetFor(kill_wait);
    EXPECT_LE(b.stop_grace_seconds + b.kill_after_seconds + b.margin_seconds, kill_wait)
        << kill_wait;
    EXPECT_GE(b.stop_grace_seconds, 1);
    EXPECT_GE(b.kill_after_seconds, 1);
  }
  StopBudget b = StopBudgetFor(kSlurmDefaultKillWaitSeconds);
  EXPECT_EQ(b.margin_seconds, 5);
  EXPECT_EQ(b.kill_after_seconds, 8);
  EXPECT_EQ(b.stop_grace_seconds, 17);
}

// Runs the generated script with bash against fake Slurm commands (squeue answers
// $FAKE_JOB_STATE, scontrol logs its arguments) and a fake `fulcrum run` that exits 75 on USR1
// or TERM, as the real one does after its checkpoint; sends `signal` to the batch shell.
struct ScriptRun {
  int exit_code = -1;
  std::string scontrol_log;
  std::string output;
};

void WriteExecutable(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  fs::permissions(path, fs::perms::owner_all);
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

ScriptRun RunScriptWithSignal(int signal, const std::string& job_state) {
  const std::string dir = testing::MakeTempDir("sbatch-script");
  const std::string bin = dir + "/bin";
  fs::create_directories(bin);
  WriteExecutable(bin + "/squeue", "#!/bin/sh\necho \"$FAKE_JOB_STATE\"\n");
  WriteExecutable(bin + "/scontrol", "#!/bin/sh\necho \"$*\" >> " + dir + "/scontrol.log\n");
  WriteExecutable(dir + "/fulcrum", "#!/bin/bash\ntrap 'exit 75' TERM USR1\ntouch " + dir +
                                        "/ready\nwhile :; do sleep 0.05; done\n");
  SbatchSpec spec;
  spec.job_name = "j";
  spec.fulcrum_binary = dir + "/fulcrum";
  spec.command = {"true"};
  WriteExecutable(dir + "/job.sbatch", GenerateSbatch(spec));

  const std::string path = "PATH=" + bin + ":/usr/bin:/bin";
  const std::string state = "FAKE_JOB_STATE=" + job_state;
  const std::string out = dir + "/out";
  std::vector<std::string> env = {path, state, "SLURM_JOB_ID=42", "SLURMD_NODENAME=n1"};
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string bash = "/bin/bash", script = dir + "/job.sbatch";
  char* argv[] = {bash.data(), script.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  ScriptRun run;
  if (posix_spawn(&pid, bash.c_str(), &actions, nullptr, argv, envp.data()) != 0) return run;
  posix_spawn_file_actions_destroy(&actions);
  for (int i = 0; i < 200 && !fs::exists(dir + "/ready"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the traps are set by now
  kill(pid, signal);
  int status = 0;
  waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.scontrol_log = ReadAll(dir + "/scontrol.log");
  run.output = ReadAll(out);
  fs::remove_all(dir);
  return run;
}

TEST(SlurmTest, SigtermToTheBatchShellIsANoticeThatRequeues) {
  ScriptRun run = RunScriptWithSignal(SIGTERM, "RUNNING");
  EXPECT_EQ(run.exit_code, 75) << run.output;
  EXPECT_NE(run.scontrol_log.find("requeue 42"), std::string::npos) << run.output;
}

TEST(SlurmTest, Usr1AdvanceNoticeRequeues) {
  ScriptRun run = RunScriptWithSignal(SIGUSR1, "RUNNING");
  EXPECT_EQ(run.exit_code, 75) << run.output;
  EXPECT_NE(run.scontrol_log.find("requeue 42"), std::string::npos) << run.output;
}

TEST(SlurmTest, NoRequeueWhenSlurmIsEndingTheJob) {
  // scancel, scontrol requeue and preemption leave the job COMPLETING: a cancelled job must stay
  // cancelled, and Slurm requeues by itself when it means to.
  ScriptRun run = RunScriptWithSignal(SIGTERM, "COMPLETING");
  EXPECT_EQ(run.exit_code, 75) << run.output;
  EXPECT_EQ(run.scontrol_log.find("requeue"), std::string::npos) << run.scontrol_log;
  EXPECT_NE(run.output.find("Slurm is ending job 42 (COMPLETING); not requeueing"),
            std::string::npos)
      << run.output;
}

// Runs `script` with bash as node `rank` of a 2-node job would see it: fake `fulcrum run` and
// `srun` that run what follows them, `scontrol show hostnames` answering 10.0.0.1 and 10.0.0.2,
// a recording launcher. Returns the words the launcher got, one per line.
std::string LaunchOnNode(const std::string& script, const std::string& launcher, int rank) {
  const std::string dir = testing::MakeTempDir("sbatch-node");
  fs::create_directories(dir + "/bin");
  WriteExecutable(dir + "/bin/fulcrum",
                  "#!/bin/sh\nwhile [ \"$1\" != -- ]; do shift; done\nshift\nexec \"$@\"\n");
  WriteExecutable(dir + "/bin/srun",
                  "#!/bin/sh\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done\n"
                  "exec \"$@\"\n");
  WriteExecutable(dir + "/bin/scontrol", "#!/bin/sh\nprintf '10.0.0.1\\n10.0.0.2\\n'\n");
  WriteExecutable(dir + "/bin/" + launcher,
                  "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + dir + "/record\n");
  WriteExecutable(dir + "/job.sbatch", script);
  testing::RunOptions options;
  options.env = {{"PATH", dir + "/bin:/usr/bin:/bin"},   {"SLURM_JOB_ID", "42"},
                 {"SLURM_JOB_NUM_NODES", "2"},           {"SLURM_NNODES", "2"},
                 {"SLURM_NODEID", std::to_string(rank)}, {"SLURM_JOB_NODELIST", "n[1-2]"}};
  options.timeout_seconds = 20;
  testing::RunOutput run = testing::RunProgram("/bin/bash", {dir + "/job.sbatch"}, options);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  const std::string record = ReadAll(dir + "/record");
  fs::remove_all(dir);
  return record;
}

TEST(SlurmTest, EachNodeStartsOneProcessPerGpuWithItsRank) {
  // Before issue 25, `accelerate launch` on two nodes got neither --num_processes nor
  // --machine_rank: both nodes started as machine 0 of one.
  SbatchSpec spec = TwoNodeSpec();
  spec.fulcrum_binary = "fulcrum";
  spec.command = {"accelerate", "launch", "--num_processes", "8", "train.py", "--lr", "1e-4"};
  const std::string accelerate = LaunchOnNode(GenerateSbatch(spec), "accelerate", 1);
  for (const char* word :
       {"--num_processes\n16\n", "--num_machines=2\n", "--machine_rank=1\n",
        "--main_process_ip=10.0.0.1\n", "--main_process_port=29400\n", "train.py\n--lr\n1e-4\n"}) {
    EXPECT_NE(accelerate.find(word), std::string::npos) << word << " not in\n" << accelerate;
  }
  spec.command = {"torchrun", "train.py"};
  const std::string torchrun = LaunchOnNode(GenerateSbatch(spec), "torchrun", 1);
  for (const char* word : {"--nproc_per_node=8\n", "--nnodes\n2\n",
                           "--rdzv-endpoint\n10.0.0.1:29400\n", "--rdzv-id\n42\n"}) {
    EXPECT_NE(torchrun.find(word), std::string::npos) << word << " not in\n" << torchrun;
  }
}

TEST(SlurmTest, ANodeCommandRunsThroughTheNodesShell) {
  // plan --export slurm: the node's shell text (exports, then the command) runs on each node.
  SbatchSpec spec = TwoNodeSpec();
  spec.fulcrum_binary = "fulcrum";
  spec.command.clear();
  spec.node_command =
      "export NODE_RANK=\"$SLURM_NODEID\"\nexec torchrun --node_rank $NODE_RANK x.py";
  const std::string record = LaunchOnNode(GenerateSbatch(spec), "torchrun", 1);
  EXPECT_EQ(record, "--node_rank\n1\nx.py\n");
}

}  // namespace
}  // namespace fulcrum::cluster
