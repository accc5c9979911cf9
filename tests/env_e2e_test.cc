// End-to-end checks of `fulcrum env` (the node's set-up files) and of the topology section of
// `fulcrum doctor`, through the real binary. The playbook goes through `ansible-playbook
// --syntax-check` (Debian's `ansible`, which carries community.docker) where it is installed;
// the YAML shapes are read back with PyYAML (python3-yaml).
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

bool HasProgram(const std::string& name) {
  return RunProgram("sh", {"-c", "command -v " + name}).exit_code == 0;
}

// Reads the playbook and the compose file with PyYAML and prints what the tests compare.
constexpr const char* kYamlShape = R"PY(
import json, sys, yaml
play = yaml.safe_load(open(sys.argv[1]))
compose = yaml.safe_load(open(sys.argv[2]))
tasks = play[0]["tasks"]
pull = [t for t in tasks if "community.docker.docker_image" in t][0]["community.docker.docker_image"]
run = [t for t in tasks if "community.docker.docker_container" in t][0]["community.docker.docker_container"]
train = compose["services"]["train"]
print(json.dumps({
  "hosts": play[0]["hosts"],
  "pull": pull["name"] + ":" + pull["tag"], "source": pull["source"],
  "run_image": run["image"], "device_requests": run["device_requests"],
  "volumes": run["volumes"], "ports": run["published_ports"],
  "compose_image": train["image"],
  "compose_devices": train["deploy"]["resources"]["reservations"]["devices"],
  "compose_ports": train["ports"]}))
)PY";

struct Written {
  std::string dir;
  nlohmann::json env;
};

Written WriteSetup(const std::vector<std::string>& extra) {
  Written w;
  w.dir = MakeTempDir("env_e2e");
  std::vector<std::string> args = {"env",          "--json",
                                   "--dockerfile", w.dir + "/Dockerfile",
                                   "--ansible",    w.dir + "/playbook.yml",
                                   "--compose",    w.dir + "/compose.yaml"};
  args.insert(args.end(), extra.begin(), extra.end());
  RunOutput r = RunFulcrum(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code == 0) w.env = nlohmann::json::parse(r.out)["env"];
  return w;
}

TEST(EnvE2eTest, WritesDockerfilePlaybookAndComposeAroundThePinnedImage) {
  Written w = WriteSetup({"--driver", "535.104.05", "--framework", "pytorch", "--gpu", "A100",
                          "--data-dir", "/mnt/data", "--port", "6006", "--port", "8888"});
  ASSERT_TRUE(w.env.is_object());
  const std::string ref = w.env["image"]["ref"];
  EXPECT_EQ(w.env["max_cuda"], "12.2");  // catalog/cuda_driver.csv: 535.54.03 <= 535.104.05
  EXPECT_NE(ref.find(':'), std::string::npos);
  EXPECT_EQ(ref.find(":latest"), std::string::npos);

  // The Dockerfile's first instruction is FROM the pinned image.
  std::string dockerfile = FileContents(w.dir + "/Dockerfile");
  size_t from = dockerfile.find("\nFROM ");
  ASSERT_NE(from, std::string::npos) << dockerfile;
  EXPECT_EQ(dockerfile.substr(from + 6, dockerfile.find('\n', from + 1) - from - 6), ref);
  for (size_t at = 0; at < from; at = dockerfile.find('\n', at) + 1)
    EXPECT_EQ(dockerfile[at], '#') << "only comments before FROM";

  RunOutput shape =
      RunProgram("python3", {"-c", kYamlShape, w.dir + "/playbook.yml", w.dir + "/compose.yaml"});
  ASSERT_EQ(shape.exit_code, 0) << shape.err;
  auto doc = nlohmann::json::parse(shape.out);
  EXPECT_EQ(doc["pull"], ref);
  EXPECT_EQ(doc["source"], "pull");
  EXPECT_EQ(doc["run_image"], ref);
  EXPECT_EQ(doc["device_requests"][0]["driver"], "nvidia");
  EXPECT_EQ(doc["device_requests"][0]["count"], -1);
  EXPECT_EQ(doc["device_requests"][0]["capabilities"], nlohmann::json::parse(R"([["gpu"]])"));
  EXPECT_EQ(doc["volumes"], nlohmann::json::parse(R"(["/mnt/data:/data"])"));
  EXPECT_EQ(doc["ports"],
            nlohmann::json::parse(R"(["127.0.0.1:6006:6006", "127.0.0.1:8888:8888"])"));
  EXPECT_EQ(doc["compose_image"], ref);
  EXPECT_EQ(doc["compose_devices"][0]["driver"], "nvidia");
  EXPECT_EQ(doc["compose_devices"][0]["capabilities"], nlohmann::json::parse(R"(["gpu"])"));
  EXPECT_EQ(doc["compose_ports"], doc["ports"]);
  std::filesystem::remove_all(w.dir);
}

TEST(EnvE2eTest, PlaybookPassesAnsibleSyntaxCheck) {
  if (!HasProgram("ansible-playbook"))
    GTEST_SKIP() << "ansible-playbook not installed (Debian package ansible, scripts/setup.sh)";
  // The playbook's shape does not depend on the image; a misspelt module name fails the check.
  Written w = WriteSetup({"--driver", "470.82.01", "--framework", "pytorch"});
  RunOptions options;
  options.env["HOME"] = w.dir;  // ansible writes ~/.ansible
  options.env["ANSIBLE_LOCAL_TEMP"] = w.dir + "/tmp";
  RunOutput check = RunProgram(
      "ansible-playbook", {"--syntax-check", "-i", "localhost,", w.dir + "/playbook.yml"}, options);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  std::filesystem::remove_all(w.dir);
}

TEST(EnvE2eTest, BadInputIsExitTwoWithTheNearest) {
  RunOutput framework =
      RunFulcrum({"env", "--json", "--driver", "535.104.05", "--framework", "pytroch"});
  EXPECT_EQ(framework.exit_code, 2);
  auto error = nlohmann::json::parse(framework.err)["error"];
  EXPECT_EQ(error["field"], "--framework");
  EXPECT_EQ(error["nearest"], nlohmann::json::parse(R"(["pytorch"])"));

  RunOutput version = RunFulcrum(
      {"env", "--driver", "535.104.05", "--framework", "pytorch", "--framework-version", "2.33"});
  EXPECT_EQ(version.exit_code, 2);
  EXPECT_NE(version.err.find("--framework-version"), std::string::npos) << version.err;

  RunOutput old = RunFulcrum({"env", "--driver", "470.82.01", "--framework", "jax"});
  EXPECT_EQ(old.exit_code, 2);
  EXPECT_NE(old.err.find("needs driver >="), std::string::npos) << old.err;
}

// With no --driver, env reads the node as doctor does: here a sim node (driver 550.54.15).
TEST(EnvE2eTest, ReadsTheDriverFromTheNode) {
  RunOutput r = RunFulcrum({"env", "--json", "--source", "sim", "--sim-gpu", "A100-SXM4-80GB",
                            "--framework", "pytorch"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto env = nlohmann::json::parse(r.out)["env"];
  EXPECT_EQ(env["driver"], "550.54.15");
  EXPECT_EQ(env["max_cuda"], "12.4");
  EXPECT_NE(env["gpu"].get<std::string>().find("A100"), std::string::npos);
  EXPECT_EQ(env["written"]["dockerfile"], nullptr);
}

TEST(EnvE2eTest, DoctorReportsTheWiringOfASavedTopology) {
  RunOptions options;
  options.env["NCCL_P2P_DISABLE"] = "1";
  RunOutput r = RunFulcrum({"doctor", "--json", "--source", "sim", "--topo-file",
                            SourcePath("tests/fixtures/topo/dgx-a100-nv12-first-rows.txt")},
                           options);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> checks;
  for (const auto& c : doc["checks"]) checks[c["name"].get<std::string>()] = c;
  ASSERT_TRUE(checks.count("gpu-interconnect"));
  EXPECT_NE(checks["gpu-interconnect"]["finding"].get<std::string>().find("NVLink"),
            std::string::npos);
  EXPECT_EQ(checks["nccl-topology"]["status"], "warn");
  EXPECT_NE(checks["numa-affinity"]["finding"].get<std::string>().find("NUMA node 3"),
            std::string::npos);

  const std::string dir = MakeTempDir("topo_e2e");
  const std::string bad = dir + "/topo.txt";
  RunProgram("sh", {"-c", "printf '\\tGPU0\\tGPU1\\nGPU0\\t X \\tQPI\\n' > " + bad});
  RunOutput refused = RunFulcrum({"doctor", "--source", "sim", "--topo-file", bad});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find(bad + ":2: GPU0 column GPU1"), std::string::npos) << refused.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fulcrum::testing
