// `fulcrum env`: the set-up of a rented node as files. The container images a framework ships in
// (catalog/container_images.csv: NGC and Docker Hub tags, each row sourced) are matched against
// the driver (the highest CUDA it runs, from catalog/cuda_driver.csv through driver_table.h), and
// the chosen image, pinned by tag, is written as a Dockerfile, an Ansible playbook
// (community.docker) and a Docker Compose file. Plain data and pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "nodecheck/doctor_facts.h"
#include "nodecheck/driver_table.h"

namespace fulcrum::nodecheck {

// One row of catalog/container_images.csv.
struct ContainerImage {
  std::string framework;          // "pytorch", "tensorflow", "jax"
  std::string framework_version;  // "2.3.1", "2.1.0a0" (NGC's builds carry an a0 suffix)
  std::string image;              // "pytorch/pytorch", "nvcr.io/nvidia/pytorch"
  std::string tag;                // "2.3.1-cuda12.1-cudnn8-runtime", "24.01-py3"
  std::string cuda_version;       // the CUDA inside the image: "12.1", "12.3.2"
  std::string min_driver_linux;   // the driver its source asks for: "530.30.02", "545"
  std::string source;             // URL (and where on the page)
  std::string note;

  std::string Ref() const { return image + ":" + tag; }
};

// The frameworks `fulcrum env` knows, as --framework spells them.
const std::vector<std::string>& EnvFrameworks();

// Reads `catalog_dir`/container_images.csv through the one table loader; errors name
// file:line: column (an unknown framework names the nearest of EnvFrameworks()).
Result<std::vector<ContainerImage>> LoadContainerImages(const std::string& catalog_dir);

// The highest CUDA "MAJOR.MINOR" whose toolkit's minimum driver (catalog/cuda_driver.csv) is at
// most `driver`; nullopt when the driver is older than every row.
std::optional<std::string> MaxCudaForDriver(const DriverTable& table, const std::string& driver);

// What the set-up is for. `driver` is a dotted version ("535.104.05"); an empty
// framework_version means the newest release that runs on the driver; a framework_version
// matches a row by whole dotted parts ("2.3" matches "2.3.1" and "2.3.0a0").
struct EnvRequest {
  std::string framework = "pytorch";
  std::string framework_version;
  std::string driver;
  std::string gpu;                  // the GPU's name, written into the files' comments
  std::string data_dir = "/data";   // host directory mounted at /data in the container
  std::vector<int> ports = {6006};  // published on `bind_address` (TensorBoard by default)
  std::string bind_address = "127.0.0.1";
  std::string container_name = "fulcrum-train";
  // The version was read from the node's Python, not asked for: when no image carries it, the
  // newest release that runs is chosen (with a note) instead of an input error.
  bool framework_version_is_hint = false;
};

struct EnvChoice {
  ContainerImage image;
  std::string max_cuda;  // of the driver, "MAJOR.MINOR"
  // The catalog rows of the framework (and version) that the driver cannot run, with why.
  std::vector<std::string> rejected;
  std::vector<std::string> notes;  // where inputs came from, hints not followed
};

// Fills what `request` lacks from the facts doctor probes (doctor_facts.h): the driver
// (nvidia-smi), the GPU's name and count, and, when `read_framework`, the first framework
// found in the node's Python ("torch" as pytorch; its version without the local "+cu121" part, as
// a hint). Appends to `notes` where each value came from. InvalidInput naming --driver when no
// driver was given and none could be read (the probe's reason in the message).
Status FillFromNode(const SystemFacts& facts, bool read_framework, EnvRequest& request,
                    std::vector<std::string>& notes);

// Checks `request` (framework, version, driver, data_dir, ports, names): InvalidInput naming the
// flag, what was expected and the nearest valid names. Picks, among the rows that the driver
// runs (driver >= the row's min_driver_linux and >= the minimum driver of the image's CUDA in
// catalog/cuda_driver.csv), the newest framework version, then the newest CUDA. NotFound when no
// row runs: the message names the driver's highest CUDA and the oldest image's needs.
Result<EnvChoice> ChooseImage(const std::vector<ContainerImage>& images, const DriverTable& table,
                              const EnvRequest& request);

// The files. Each opens with a comment naming the driver, its highest CUDA, the image's source
// and the documentation of the options used.
std::string RenderDockerfile(const EnvChoice& choice, const EnvRequest& request);
std::string RenderAnsiblePlaybook(const EnvChoice& choice, const EnvRequest& request);
std::string RenderCompose(const EnvChoice& choice, const EnvRequest& request);

}  // namespace fulcrum::nodecheck
