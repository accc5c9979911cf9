// Issue 29, item 11, through the real binary: each hostile input is refused with exit 2 and the
// place it is wrong (file:line, file:line:column, the path and its size or mode), and what
// `fulcrum run` writes about a job (its log, the data dir) is its owner's alone.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {
namespace fs = std::filesystem;

class InputFaultsE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("input-faults");
    fs::create_directories(dir_ + "/offers.d");
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  RunOptions Isolated() const {
    RunOptions o;
    o.env["FULCRUM_OFFERS_DIR"] = dir_ + "/offers.d";
    o.timeout_seconds = 60;
    return o;
  }
  static unsigned Mode(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
  }
  std::string dir_;
};

TEST_F(InputFaultsE2e, ANulByteInAnOffersCellIsRefusedAtItsLineAndColumn) {
  std::ofstream(dir_ + "/offers.d/mine.csv", std::ios::binary)
      << "provider,instance_type,region,gpu,gpu_count,on_demand_per_hour,source\n"
      << std::string("my\0cloud,box-8,basement,H100-SXM,8,1.50,own\n", 44);
  RunOutput r = RunFulcrum({"offers"}, Isolated());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(dir_ + "/offers.d/mine.csv:2:3: expected a cell without NUL bytes"),
            std::string::npos)
      << r.err;
}

TEST_F(InputFaultsE2e, AnInputOver16MiBIsRefusedWithItsSize) {
  const std::string path = dir_ + "/offers.d/huge.csv";
  std::ofstream(path) << "provider,instance_type,region,gpu,gpu_count,on_demand_per_hour,source\n";
  fs::resize_file(path, 200u << 20);  // sparse: no disk used
  RunOutput r = RunFulcrum({"offers"}, Isolated());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(path + ": expected a catalog file of at most 16 MiB, found 200 MiB "
                              "(209715200 bytes)"),
            std::string::npos)
      << r.err;
}

TEST_F(InputFaultsE2e, NumbersOutOfRangeAreReportedAsWrittenAtTheirLine) {
  std::ofstream(dir_ + "/spec.yaml") << "model: llama-2-7b\ntokens: 1e-320\n";
  RunOutput r = RunFulcrum({"plan", dir_ + "/spec.yaml"}, Isolated());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(dir_ + "/spec.yaml:2: tokens: expected"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("found \"1e-320\""), std::string::npos) << r.err;

  std::ofstream(dir_ + "/agent.yaml") << "source: sim\nsim-gpus: 1e19\n";
  r = RunFulcrum({"agent", "--config", dir_ + "/agent.yaml"}, Isolated());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(dir_ + "/agent.yaml:2: sim-gpus: expected a whole number from 1 to 64, "
                              "found \"1e19\""),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("-2147483648"), std::string::npos) << r.err;
}

TEST_F(InputFaultsE2e, AMultiDocumentYamlIsRefusedAtTheSecondDocument) {
  std::ofstream(dir_ + "/spec.yaml") << "model: llama-2-7b\ntokens: 1B\n---\ntokens: 2B\n";
  RunOutput r = RunFulcrum({"plan", dir_ + "/spec.yaml"}, Isolated());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(dir_ + "/spec.yaml:4: expected one YAML document, found a second"),
            std::string::npos)
      << r.err;
}

TEST_F(InputFaultsE2e, AnAgentConfigWithSecretsOthersCanReadIsRefusedWithTheChmod) {
  const std::string path = dir_ + "/agent.yaml";
  std::ofstream(path) << "source: sim\ntoken: AGENTTOKENSECRET\n";
  ::chmod(path.c_str(), 0644);
  RunOutput r = RunFulcrum({"agent", "--config", path}, Isolated());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("run: chmod 600 " + path), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("found mode 0644"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("AGENTTOKENSECRET"), std::string::npos) << r.err;
}

TEST_F(InputFaultsE2e, ACheckpointDirLinkedToRootIsRefusedBeforeTheJobStarts) {
  fs::create_directory_symlink("/", dir_ + "/ckpt");
  RunOutput r = RunFulcrum({"run", "--data-dir", dir_ + "/data", "--agent", "none",
                            "--checkpoint-dir", dir_ + "/ckpt", "--", "/bin/true"},
                           Isolated());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--checkpoint-dir " + dir_ +
                       "/ckpt: expected a directory of the job's "
                       "own (not / or a system directory), found the system directory / (" +
                       dir_ + "/ckpt -> /)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("resum"), std::string::npos) << r.err;
}

TEST_F(InputFaultsE2e, JobLogsAreOwnerOnlyInAnOwnerOnlyDataDir) {
  const std::string data = dir_ + "/data";
  RunOutput r = RunFulcrum({"run", "--data-dir", data, "--agent", "none", "--name", "job", "--",
                            "/bin/echo", "a line the job prints"},
                           Isolated());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Mode(data), 0700u);
  EXPECT_EQ(Mode(data + "/logs"), 0700u);
  EXPECT_EQ(Mode(data + "/run"), 0700u);
  ASSERT_TRUE(fs::exists(data + "/logs/job.log"));
  EXPECT_EQ(Mode(data + "/logs/job.log"), 0600u);
  EXPECT_NE(FileContents(data + "/logs/job.log").find("a line the job prints"), std::string::npos);
}

}  // namespace
}  // namespace fulcrum::testing
