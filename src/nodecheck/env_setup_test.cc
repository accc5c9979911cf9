#include "nodecheck/env_setup.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fulcrum::nodecheck {
namespace {

struct Shipped {
  std::vector<ContainerImage> images;
  DriverTable table;
};

Shipped Load() {
  Shipped s;
  auto images = LoadContainerImages(FULCRUM_SOURCE_DIR "/catalog");
  EXPECT_TRUE(images.ok()) << images.status().ToString();
  if (images.ok()) s.images = *images;
  auto table = LoadDriverTable(FULCRUM_SOURCE_DIR "/catalog");
  EXPECT_TRUE(table.ok()) << table.status().ToString();
  if (table.ok()) s.table = *table;
  return s;
}

EnvRequest Request(const std::string& framework, const std::string& driver,
                   const std::string& version = "") {
  EnvRequest request;
  request.framework = framework;
  request.driver = driver;
  request.framework_version = version;
  return request;
}

TEST(EnvSetupTest, EveryShippedRowIsSourcedAndPinned) {
  Shipped s = Load();
  ASSERT_GE(s.images.size(), 10u);
  for (const ContainerImage& image : s.images) {
    EXPECT_NE(image.source.find("https://"), std::string::npos) << image.Ref();
    EXPECT_NE(image.tag, "latest");
    // Every image's CUDA has a minimum driver in catalog/cuda_driver.csv, else no driver runs it.
    EXPECT_TRUE(MinDriverFor(s.table, image.cuda_version).has_value()) << image.Ref();
  }
}

// The driver's highest CUDA, read off catalog/cuda_driver.csv by hand: 470.42.01 <= 470.82.01 <
// 495.29.05 (11.5); 535.54.03 <= 535.104.05 < 545.23.06 (12.3); 550.54.14 <= 550.54.15 <
// 555.42.02 (12.5); 570.26 <= 570.86.15 < 575.51.03 (12.9).
TEST(EnvSetupTest, ChosenImageRunsOnTheDriver) {
  Shipped s = Load();
  const std::pair<const char*, const char*> cases[] = {
      {"470.82.01", "11.4"}, {"535.104.05", "12.2"}, {"550.54.15", "12.4"}, {"570.86.15", "12.8"}};
  for (const auto& [driver, max_cuda] : cases) {
    EXPECT_EQ(MaxCudaForDriver(s.table, driver), max_cuda) << driver;
    for (const std::string& framework : EnvFrameworks()) {
      auto choice = ChooseImage(s.images, s.table, Request(framework, driver));
      if (!choice.ok()) {
        // Only "no image of this framework runs here" is allowed (JAX's one row needs 12.4).
        EXPECT_EQ(choice.status().code(), StatusCode::kNotFound) << choice.status().ToString();
        continue;
      }
      const ContainerImage& image = choice->image;
      EXPECT_EQ(choice->max_cuda, max_cuda);
      EXPECT_LE(CompareVersions(MajorMinor(image.cuda_version), max_cuda), 0)
          << driver << " " << image.Ref();
      EXPECT_LE(CompareVersions(*MinDriverFor(s.table, image.cuda_version), driver), 0);
      EXPECT_LE(CompareVersions(image.min_driver_linux, driver), 0) << image.Ref();
    }
  }
}

TEST(EnvSetupTest, NewestReleaseThatRunsWins) {
  Shipped s = Load();
  // On 535 the pytorch/pytorch 2.3.1 (CUDA 12.1) image is the newest PyTorch that runs; the
  // 2.5.1 image needs CUDA 12.4 (550.54.14) and is listed as rejected.
  auto choice = ChooseImage(s.images, s.table, Request("pytorch", "535.104.05"));
  ASSERT_TRUE(choice.ok()) << choice.status().ToString();
  EXPECT_EQ(choice->image.framework_version, "2.3.1");
  EXPECT_EQ(choice->image.cuda_version, "12.1");
  bool rejected_251 = false;
  for (const std::string& why : choice->rejected)
    rejected_251 |= why.find("2.5.1-cuda12.4") != std::string::npos &&
                    why.find("550.54.14") != std::string::npos;
  EXPECT_TRUE(rejected_251);
  // A version asked for matches by whole parts: 1.12 -> 1.12.1, not 1.1x.
  auto old = ChooseImage(s.images, s.table, Request("pytorch", "470.82.01", "1.12"));
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->image.tag, "1.12.1-cuda11.3-cudnn8-runtime");
  // "2.1.0" matches NGC's 2.1.0a0 build (and not 2.1.2).
  auto ngc = ChooseImage(s.images, s.table, Request("pytorch", "570.86.15", "2.1.0"));
  ASSERT_TRUE(ngc.ok()) << ngc.status().ToString();
  EXPECT_EQ(ngc->image.Ref(), "nvcr.io/nvidia/pytorch:23.10-py3");
}

TEST(EnvSetupTest, BadInputNamesTheFlagAndTheNearest) {
  Shipped s = Load();
  auto framework = ChooseImage(s.images, s.table, Request("pytroch", "535.104.05"));
  ASSERT_FALSE(framework.ok());
  EXPECT_EQ(framework.status().code(), StatusCode::kInvalidInput);
  ASSERT_NE(framework.status().detail(), nullptr);
  EXPECT_EQ(framework.status().detail()->field, "--framework");
  EXPECT_EQ(framework.status().detail()->nearest, std::vector<std::string>{"pytorch"});

  auto version = ChooseImage(s.images, s.table, Request("pytorch", "535.104.05", "2.4"));
  ASSERT_FALSE(version.ok());
  EXPECT_EQ(version.status().detail()->field, "--framework-version");
  EXPECT_NE(version.status().message().find("2.3.1"), std::string::npos)
      << version.status().message();

  auto driver = ChooseImage(s.images, s.table, Request("pytorch", "latest"));
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().detail()->field, "--driver");

  auto too_old = ChooseImage(s.images, s.table, Request("pytorch", "390.48"));
  ASSERT_FALSE(too_old.ok());
  EXPECT_EQ(too_old.status().code(), StatusCode::kNotFound);
  EXPECT_NE(too_old.status().message().find("older than every CUDA toolkit"), std::string::npos);

  EnvRequest colon = Request("pytorch", "535.104.05");
  colon.data_dir = "/data:/etc";
  EXPECT_EQ(ChooseImage(s.images, s.table, colon).status().detail()->field, "--data-dir");
  EnvRequest jinja = Request("pytorch", "535.104.05");
  jinja.data_dir = "/data/{{ lookup('env','HOME') }}";
  EXPECT_FALSE(ChooseImage(s.images, s.table, jinja).ok());
  EnvRequest port = Request("pytorch", "535.104.05");
  port.ports = {70000};
  EXPECT_EQ(ChooseImage(s.images, s.table, port).status().detail()->field, "--port");
}

TEST(EnvSetupTest, FilesNameThePinnedImage) {
  Shipped s = Load();
  EnvRequest request = Request("pytorch", "535.104.05");
  request.gpu = "8x NVIDIA A100-SXM4-80GB";
  auto choice = ChooseImage(s.images, s.table, request);
  ASSERT_TRUE(choice.ok());
  const std::string ref = choice->image.Ref();
  std::string dockerfile = RenderDockerfile(*choice, request);
  EXPECT_NE(dockerfile.find("\nFROM " + ref + "\n"), std::string::npos) << dockerfile;
  EXPECT_NE(dockerfile.find("import torch"), std::string::npos);
  EXPECT_NE(dockerfile.find("on 8x NVIDIA A100-SXM4-80GB"), std::string::npos);
  // A name with a newline stays inside its comment line.
  request.gpu = "A100\nFROM evil:latest";
  EXPECT_EQ(RenderDockerfile(*choice, request).find("\nFROM evil"), std::string::npos);
  std::string playbook = RenderAnsiblePlaybook(*choice, request);
  EXPECT_EQ(playbook.rfind("---\n", 0), 0u);
  EXPECT_NE(playbook.find("community.docker.docker_container:"), std::string::npos);
  EXPECT_NE(playbook.find("\"127.0.0.1:6006:6006\""), std::string::npos);
  std::string compose = RenderCompose(*choice, request);
  EXPECT_NE(compose.find("capabilities: [gpu]"), std::string::npos);
  EXPECT_NE(compose.find("image: \"" + ref + "\""), std::string::npos);
}

TEST(EnvSetupTest, FillFromNodeReadsDriverGpusAndFramework) {
  SystemFacts facts;
  facts.driver_version = "550.54.15";
  facts.gpus.resize(2);
  facts.gpus[0].name = facts.gpus[1].name = "NVIDIA H100 80GB HBM3";
  facts.frameworks.push_back({"torch", "2.9.9+cu126", "12.6", true});
  EnvRequest request;
  std::vector<std::string> notes;
  ASSERT_TRUE(FillFromNode(facts, /*read_framework=*/true, request, notes).ok());
  EXPECT_EQ(request.driver, "550.54.15");
  EXPECT_EQ(request.gpu, "2x NVIDIA H100 80GB HBM3");
  EXPECT_EQ(request.framework, "pytorch");
  EXPECT_EQ(request.framework_version, "2.9.9");
  EXPECT_EQ(notes.size(), 3u);
  // torch 2.9.9 has no image: the hint falls back to the newest that runs, with a note.
  Shipped s = Load();
  auto choice = ChooseImage(s.images, s.table, request);
  ASSERT_TRUE(choice.ok()) << choice.status().ToString();
  EXPECT_EQ(choice->image.framework, "pytorch");
  ASSERT_FALSE(choice->notes.empty());
  EXPECT_NE(choice->notes[0].find("2.9.9"), std::string::npos);

  SystemFacts none;
  none.driver_probe_note = "nvidia-smi not found on PATH";
  EnvRequest empty;
  Status status = FillFromNode(none, false, empty, notes);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("nvidia-smi not found on PATH"), std::string::npos);
  ASSERT_NE(status.detail(), nullptr);
  EXPECT_EQ(status.detail()->field, "--driver");
}

TEST(EnvSetupTest, LoaderNamesFileLineAndColumn) {
  const std::string dir = std::string(FULCRUM_BUILD_DIR) + "/Testing/env_setup";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/container_images.csv")
      << "framework,framework_version,image,tag,cuda_version,min_driver_linux,source\n"
      << "pytorch,2.3.1,pytorch/pytorch,2.3.1-cuda12.1-cudnn8-runtime,12.1,530.30.02,hub\n"
      << "pytorc,2.3.1,pytorch/pytorch,latest,12.1,530.30.02,hub\n";
  auto images = LoadContainerImages(dir);
  ASSERT_FALSE(images.ok());
  EXPECT_EQ(images.status().message(),
            dir +
                "/container_images.csv:3: framework: expected one of pytorch, tensorflow, jax, "
                "found \"pytorc\"; did you mean pytorch?");
  std::ofstream(dir + "/container_images.csv")
      << "framework,framework_version,image,tag,cuda_version,min_driver_linux,source\n"
      << "pytorch,2.3.1,pytorch/pytorch,latest,12.1,530.30.02,hub\n";
  images = LoadContainerImages(dir);
  ASSERT_FALSE(images.ok());
  EXPECT_NE(images.status().message().find(":2: tag: expected a pinned tag"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fulcrum::nodecheck
