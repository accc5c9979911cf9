// End-to-end tests of the job webhook as a secret (`fulcrum submit/run --receiver URL`: Slack,
// Feishu and DingTalk URLs carry their token): the URL reaches the receiver, yet appears nowhere
// else: not in jobs.db, the sbatch script, the argv of any process (ps), the logs, `status` or
// the agent's /v1/jobs. The secrets test of the agent's receivers (receivers_e2e_test.cc) is the
// model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "support/agent_process.h"
#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ReceiverSecretE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("receiver-secret");
    // Secrets unique to this test (its temporary directory's name): the command-line scan reads
    // every process on the machine, and the other tests of this suite, run in parallel by ctest,
    // pass their own secret on purpose (the --receiver refusals).
    std::string unique = fs::path(dir_).filename().string();
    for (char& c : unique) c = std::isalnum(static_cast<unsigned char>(c)) ? c : 'X';
    path_secret_ = "RECEIVERPATHSECRET" + unique;
    token_secret_ = "RECEIVERTOKENSECRET" + unique;
  }
  void TearDown() override {
    // A queue worker started by `submit` may still be finishing (or waiting for the queue lock).
    EXPECT_TRUE(WaitForQueueWorkersToExit(Data())) << "a queue worker outlived the test";
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string Data() const { return dir_ + "/data"; }
  // The recorder's URL with a secret path and token, as a chat webhook carries them.
  std::string SecretUrl(const WebhookRecorder& recorder) const {
    return recorder.url() + "/" + path_secret_ + "?access_token=" + token_secret_;
  }
  void ExpectNoSecret(const std::string& where, const std::string& text) const {
    EXPECT_EQ(text.find(path_secret_), std::string::npos) << where << ":\n" << text;
    EXPECT_EQ(text.find(token_secret_), std::string::npos) << where << ":\n" << text;
  }
  std::string dir_, path_secret_, token_secret_;
};

// Every process's command line (what `ps` shows any user), one per line.
std::string AllCommandLines() {
  std::string all;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::string cmdline = FileContents(entry.path().string() + "/cmdline");
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    if (!cmdline.empty()) all += cmdline + "\n";
  }
  return all;
}

// Every file under `dir` but the one that holds the secret, as "path: bytes".
std::string FilesBut(const std::string& dir, const std::string& secret_file) {
  std::string all;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path() == fs::path(secret_file)) continue;
    all += entry.path().string() + ": " + FileContents(entry.path().string()) + "\n";
  }
  return all;
}

TEST_F(ReceiverSecretE2E, SubmittedJobDeliversToTheReceiverAndTheUrlAppearsNowhereElse) {
  WebhookRecorder receiver;
  AgentProcess agent(dir_, {"--source", "sim", "--sim-gpus", "1", "--listen", "127.0.0.1:0",
                            "--data-dir", Data(), "--interval", "200ms"});
  ASSERT_GT(agent.port(), 0) << agent.err();
  // A job that fails twice within the crash-loop window: a crash_loop alert, then it gives up.
  RunOutput submit = RunFulcrum({"submit",
                                 "--json",
                                 "--name",
                                 "leaky",
                                 "--data-dir",
                                 Data(),
                                 "--node-gpus",
                                 "0",
                                 "--gpus",
                                 "0",
                                 "--preemption",
                                 "none",
                                 "--agent",
                                 "none",
                                 "--backoff",
                                 "0.05s",
                                 "--crash-loop-failures",
                                 "2",
                                 "--receiver",
                                 SecretUrl(receiver),
                                 "--",
                                 "/bin/sh",
                                 "-c",
                                 "sleep 1; exit 3"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  ExpectNoSecret("submit output", submit.out + submit.err);

  // While the queue worker and the job's `fulcrum run` live, no command line holds the URL.
  std::string command_lines;
  bool ran = false;
  ASSERT_TRUE(PollUntil(
      [&] {
        const std::string now = AllCommandLines();
        if (now.find("--name leaky") != std::string::npos) {
          ran = true;
          command_lines += now;
        }
        return !receiver.Find("crash_loop").is_null();
      },
      30, 0.05))
      << agent.err() << FilesBut(Data(), "");
  EXPECT_TRUE(ran) << "the job's run was never seen in the process list";
  ExpectNoSecret("command lines", command_lines);
  // The receiver got the alert at the secret URL: the secret was used, not lost.
  EXPECT_EQ(receiver.Find("crash_loop")["alert"]["name"], "crash_loop");

  // The URL is kept readable by its owner only, and the runs name that file.
  const std::string secret_file = Data() + "/secrets/leaky.receiver";
  struct stat st {};
  ASSERT_EQ(stat(secret_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((Data() + "/secrets").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_THAT(command_lines, ::testing::HasSubstr("--receiver-file " + secret_file));

  ASSERT_TRUE(PollUntil(
      [&] {
        RunOutput s = RunFulcrum({"status", "--json", "--data-dir", Data()});
        return s.out.find("\"crash_loop\"") != std::string::npos;
      },
      30, 0.1));
  RunOutput status_json = RunFulcrum({"status", "--json", "--all", "--data-dir", Data()});
  ASSERT_EQ(status_json.exit_code, 0) << status_json.err;
  RunOutput status_text = RunFulcrum({"status", "--all", "--data-dir", Data()});
  const json jobs = agent.Get("/v1/jobs");
  ASSERT_FALSE(jobs.is_null());
  ASSERT_THAT(jobs.dump(), ::testing::HasSubstr("leaky"));  // the places searched hold the job
  ASSERT_THAT(status_json.out, ::testing::HasSubstr("leaky"));
  ExpectNoSecret("status --json", status_json.out + status_json.err);
  // status shows where the alerts go, redacted to scheme and host.
  const std::string host = receiver.url().substr(0, receiver.url().find("/hook"));
  EXPECT_EQ(json::parse(status_json.out)["jobs"][0]["receiver"], host + "/<redacted>");
  ExpectNoSecret("status", status_text.out + status_text.err);
  ExpectNoSecret("/v1/jobs", jobs.dump());
  ExpectNoSecret("agent log", agent.err() + agent.out());
  // jobs.db (and its WAL), the job's logs, the queue worker's log, agent.db.
  const std::string files = FilesBut(Data(), secret_file);
  ASSERT_THAT(files, ::testing::HasSubstr("jobs.db"));
  ASSERT_THAT(files, ::testing::HasSubstr("leaky.log"));
  ExpectNoSecret("data dir", files);
}

TEST_F(ReceiverSecretE2E, SbatchScriptNamesTheSecretFileNotTheUrl) {
  WebhookRecorder receiver;
  RunOutput r = RunFulcrum({"submit", "--slurm", "--dry-run", "--nodes", "2", "--gpus-per-node",
                            "1", "--name", "mn", "--data-dir", Data(), "--receiver",
                            SecretUrl(receiver), "--", "/bin/true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectNoSecret("sbatch script", r.out + r.err);
  EXPECT_THAT(r.out,
              ::testing::HasSubstr("'--receiver-file' '" + Data() + "/secrets/mn.receiver'"));
  EXPECT_FALSE(fs::exists(Data() + "/secrets/mn.receiver")) << "a dry run writes nothing";
}

TEST_F(ReceiverSecretE2E, RunReadsTheUrlFromAnOwnerOnlyFile) {
  WebhookRecorder receiver;
  const std::string file = dir_ + "/hook.url";
  WriteFile(file, SecretUrl(receiver) + "\n");
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  const std::vector<std::string> args = {
      "run",   "--name",          "fails", "--data-dir", Data(),    "--preemption",
      "none",  "--agent",         "none",  "--backoff",  "0.05s",   "--crash-loop-failures",
      "2",     "--receiver-file", file,    "--",         "/bin/sh", "-c",
      "exit 3"};
  // Readable by its group: refused before the job starts, the file and its mode named.
  RunOutput refused = RunFulcrum(args);
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_THAT(refused.err, ::testing::HasSubstr("--receiver-file " + file +
                                                ": expected a file only its owner can read "
                                                "(chmod 600), found mode 0640"));
  ExpectNoSecret("refusal", refused.out + refused.err);
  EXPECT_TRUE(receiver.Posts().empty());

  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
  RunOutput run = RunFulcrum(args);
  EXPECT_EQ(run.exit_code, 1) << run.err;
  ASSERT_TRUE(PollUntil([&] { return !receiver.Find("crash_loop").is_null(); }, 15)) << run.err;
  ExpectNoSecret("run output", run.out + run.err);
  ExpectNoSecret("data dir", FilesBut(Data(), ""));

  // Both spellings at once are refused.
  std::vector<std::string> both = args;
  both.insert(both.begin() + 1, {"--receiver", SecretUrl(receiver)});
  RunOutput twice = RunFulcrum(both);
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_THAT(twice.err, ::testing::HasSubstr("--receiver and --receiver-file"));
}

}  // namespace
}  // namespace fulcrum::testing
