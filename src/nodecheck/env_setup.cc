#include "nodecheck/env_setup.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/input_error.h"
#include "core/parse.h"
#include "core/row_reader.h"

namespace fulcrum::nodecheck {
namespace {

const TableSchema kImageSchema = {{"framework", "framework_version", "image", "tag", "cuda_version",
                                   "min_driver_linux", "source"},
                                  {"note"}};

// Where the files' options are documented (cited in the files' comments).
constexpr const char* kDockerImageModuleDoc =
    "https://docs.ansible.com/ansible/latest/collections/community/docker/docker_image_module.html";
constexpr const char* kDockerContainerModuleDoc =
    "https://docs.ansible.com/ansible/latest/collections/community/docker/"
    "docker_container_module.html (device_requests, published_ports, volumes, ipc_mode)";
constexpr const char* kComposeGpuDoc =
    "https://docs.docker.com/compose/how-tos/gpu-support/ (deploy.resources.reservations.devices)";
// PyTorch's README, "Docker Image": the default shared memory of a container is too small for
// torch multiprocessing (DataLoader workers); run with --ipc=host or a larger --shm-size.
constexpr const char* kSharedMemoryDoc = "https://github.com/pytorch/pytorch#docker-image";

bool IsDottedNumber(const std::string& text) {
  if (text.empty()) return false;
  for (const std::string& part : Split(text, '.')) {
    auto value = ParseInt(part);
    if (part.empty() || !value.ok() || *value < 0) return false;
  }
  return true;
}

// "0" matches "0" and "0a0" (NGC's pre-release builds), not "01" or "10".
bool PartMatches(const std::string& wanted, const std::string& part) {
  if (part == wanted) return true;
  return part.rfind(wanted, 0) == 0 &&
         !std::isdigit(static_cast<unsigned char>(part[wanted.size()]));
}

bool VersionMatches(const std::string& wanted, const std::string& version) {
  auto want = Split(wanted, '.');
  auto have = Split(version, '.');
  if (want.size() > have.size()) return false;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!PartMatches(want[i], have[i])) return false;
  }
  return true;
}

std::string ImportName(const std::string& framework) {
  return framework == "pytorch" ? "torch" : framework;
}

// A YAML double-quoted scalar: JSON's string syntax is a subset of YAML's.
std::string Quote(const std::string& text) { return nlohmann::json(text).dump(); }

Status RequestError(const std::string& flag, const std::string& expected, const std::string& found,
                    std::vector<std::string> nearest = {}, FoundIs found_is = FoundIs::kText) {
  ErrorDetail detail;
  detail.field = flag;
  detail.expected = expected;
  detail.found = found;
  detail.nearest = std::move(nearest);
  return InputError(std::move(detail), found_is);
}

bool IsIpv4(const std::string& text) {
  auto parts = Split(text, '.');
  if (parts.size() != 4) return false;
  for (const std::string& part : parts) {
    auto value = ParseInt(part);
    if (part.empty() || part.size() > 3 || !value.ok() || *value < 0 || *value > 255) return false;
  }
  return true;
}

// Docker's container names: [a-zA-Z0-9][a-zA-Z0-9_.-]*.
bool IsContainerName(const std::string& name) {
  if (name.empty() || !std::isalnum(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

// The host path goes into a Docker volume spec ("HOST:/data", so no ':') and an Ansible
// playbook (Jinja2 would expand "{{ }}", so no braces).
bool IsDataDir(const std::string& path) {
  if (path.empty() || path[0] != '/') return false;
  return std::none_of(path.begin(), path.end(), [](char c) {
    return c == ':' || c == '{' || c == '}' || std::iscntrl(static_cast<unsigned char>(c));
  });
}

Status CheckRequest(const EnvRequest& request) {
  const auto& frameworks = EnvFrameworks();
  if (std::find(frameworks.begin(), frameworks.end(), request.framework) == frameworks.end()) {
    return RequestError("--framework", "one of " + JoinNames(frameworks), request.framework,
                        NearestNames(request.framework, frameworks));
  }
  if (!IsDottedNumber(request.driver)) {
    return RequestError("--driver", "an NVIDIA driver version such as 535.104.05", request.driver);
  }
  if (!IsDataDir(request.data_dir)) {
    return RequestError("--data-dir", "an absolute path without ':', '{' or '}'", request.data_dir);
  }
  for (int port : request.ports) {
    if (port < 1 || port > 65535) {
      return RequestError("--port", "a TCP port from 1 to 65535", std::to_string(port));
    }
  }
  if (!IsIpv4(request.bind_address)) {
    return RequestError("--bind", "an IPv4 address such as 127.0.0.1", request.bind_address);
  }
  if (!IsContainerName(request.container_name)) {
    return RequestError("--name", "a container name of letters, digits, '_', '.', '-'",
                        request.container_name);
  }
  return Status::Ok();
}

// Why the driver cannot run `image`, or "" when it can.
std::string WhyNot(const ContainerImage& image, const DriverTable& table,
                   const std::string& driver) {
  auto cuda_min = MinDriverFor(table, image.cuda_version);
  if (!cuda_min) {
    return image.Ref() + ": CUDA " + MajorMinor(image.cuda_version) +
           " is not in catalog/cuda_driver.csv";
  }
  const std::string& need =
      CompareVersions(*cuda_min, image.min_driver_linux) > 0 ? *cuda_min : image.min_driver_linux;
  if (CompareVersions(driver, need) >= 0) return "";
  return image.Ref() + " (CUDA " + image.cuda_version + ") needs driver >= " + need;
}

// Candidates first by framework version, then CUDA version; ties keep the file's order.
bool Newer(const ContainerImage& a, const ContainerImage& b) {
  int by_version = CompareVersions(a.framework_version, b.framework_version);
  if (by_version != 0) return by_version > 0;
  return CompareVersions(a.cuda_version, b.cuda_version) > 0;
}

// `text` with control characters (a newline would end the comment it is written into) as spaces.
std::string OneLine(std::string text) {
  for (char& c : text) {
    if (std::iscntrl(static_cast<unsigned char>(c))) c = ' ';
  }
  return text;
}

std::string Header(const EnvChoice& choice, const EnvRequest& request) {
  const ContainerImage& image = choice.image;
  std::ostringstream out;
  out << "# Written by `fulcrum env` for NVIDIA driver " << request.driver
      << " (runs CUDA <= " << choice.max_cuda << ", catalog/cuda_driver.csv)"
      << (request.gpu.empty() ? "" : " on " + OneLine(request.gpu)) << ".\n"
      << "# Image " << image.Ref() << ": " << image.framework << " " << image.framework_version
      << ", CUDA " << image.cuda_version << ", needs driver >= " << image.min_driver_linux << ".\n"
      << "# Image source: " << OneLine(image.source) << "\n";
  return out.str();
}

}  // namespace

const std::vector<std::string>& EnvFrameworks() {
  static const std::vector<std::string> kFrameworks = {"pytorch", "tensorflow", "jax"};
  return kFrameworks;
}

Result<std::vector<ContainerImage>> LoadContainerImages(const std::string& catalog_dir) {
  FULCRUM_ASSIGN_OR_RETURN(CsvTable table,
                           LoadTableFile(catalog_dir + "/container_images.csv", kImageSchema));
  std::vector<ContainerImage> images;
  for (size_t i = 0; i < table.size(); ++i) {
    RowReader row = table.Row(i);
    ContainerImage image;
    FULCRUM_ASSIGN_OR_RETURN(image.framework, row.RequiredText("framework"));
    const auto& frameworks = EnvFrameworks();
    if (std::find(frameworks.begin(), frameworks.end(), image.framework) == frameworks.end()) {
      return row.Error("framework", "one of " + JoinNames(frameworks),
                       NearestNames(image.framework, frameworks));
    }
    FULCRUM_ASSIGN_OR_RETURN(image.framework_version, row.RequiredText("framework_version"));
    FULCRUM_ASSIGN_OR_RETURN(image.image, row.RequiredText("image"));
    FULCRUM_ASSIGN_OR_RETURN(image.tag, row.RequiredText("tag"));
    if (image.tag == "latest" || image.tag.find(':') != std::string::npos) {
      return row.Error("tag", "a pinned tag (not latest)");
    }
    FULCRUM_ASSIGN_OR_RETURN(image.cuda_version, row.RequiredText("cuda_version"));
    if (!IsDottedNumber(image.cuda_version) || Split(image.cuda_version, '.').size() < 2) {
      return row.Error("cuda_version", "a CUDA version such as 12.1 or 12.3.2");
    }
    FULCRUM_ASSIGN_OR_RETURN(image.min_driver_linux, row.RequiredText("min_driver_linux"));
    if (!IsDottedNumber(image.min_driver_linux)) {
      return row.Error("min_driver_linux", "a driver version such as 530.30.02");
    }
    FULCRUM_ASSIGN_OR_RETURN(image.source, row.RequiredText("source"));
    image.note = row.Text("note");
    images.push_back(std::move(image));
  }
  return images;
}

std::optional<std::string> MaxCudaForDriver(const DriverTable& table, const std::string& driver) {
  std::optional<std::string> best;
  for (const auto& [cuda, min_driver] : table.min_driver_by_cuda) {
    if (CompareVersions(driver, min_driver) < 0) continue;
    if (!best || CompareVersions(cuda, *best) > 0) best = cuda;
  }
  return best;
}

Result<EnvChoice> ChooseImage(const std::vector<ContainerImage>& images, const DriverTable& table,
                              const EnvRequest& request) {
  FULCRUM_RETURN_IF_ERROR(CheckRequest(request));
  std::vector<const ContainerImage*> candidates;
  std::vector<std::string> choice_notes;
  std::vector<std::string> versions;  // of the framework, in file order, once each
  for (const ContainerImage& image : images) {
    if (image.framework != request.framework) continue;
    if (std::find(versions.begin(), versions.end(), image.framework_version) == versions.end())
      versions.push_back(image.framework_version);
    if (request.framework_version.empty() ||
        VersionMatches(request.framework_version, image.framework_version))
      candidates.push_back(&image);
  }
  if (candidates.empty() && request.framework_version_is_hint) {
    choice_notes.push_back(request.framework + " " + request.framework_version +
                           " (this node's) has no image in catalog/container_images.csv; the "
                           "newest release that runs on the driver is chosen");
    for (const ContainerImage& image : images) {
      if (image.framework == request.framework) candidates.push_back(&image);
    }
  }
  if (candidates.empty()) {
    return RequestError("--framework-version",
                        "a " + request.framework +
                            " release of catalog/container_images.csv: " + JoinNames(versions),
                        request.framework_version,
                        NearestNames(request.framework_version, versions));
  }
  EnvChoice choice;
  choice.notes = std::move(choice_notes);
  choice.max_cuda = MaxCudaForDriver(table, request.driver).value_or("");
  const ContainerImage* best = nullptr;
  for (const ContainerImage* image : candidates) {
    std::string why = WhyNot(*image, table, request.driver);
    if (!why.empty()) {
      choice.rejected.push_back(std::move(why));
    } else if (best == nullptr || Newer(*image, *best)) {
      best = image;
    }
  }
  if (best == nullptr) {
    std::string what = request.framework +
                       (request.framework_version.empty() ? "" : " " + request.framework_version);
    return Status::NotFound(
        "no " + what + " image of catalog/container_images.csv runs on driver " + request.driver +
        (choice.max_cuda.empty() ? " (older than every CUDA toolkit of catalog/cuda_driver.csv)"
                                 : " (highest CUDA " + choice.max_cuda + ")") +
        ": " + JoinNames(choice.rejected) + "; upgrade the driver or choose another release");
  }
  choice.image = *best;
  return choice;
}

Status FillFromNode(const SystemFacts& facts, bool read_framework, EnvRequest& request,
                    std::vector<std::string>& notes) {
  if (request.driver.empty()) {
    if (!facts.driver_version) {
      std::string why =
          facts.driver_probe_note.empty() ? "nvidia-smi listed no GPU" : facts.driver_probe_note;
      return RequestError("--driver",
                          "an NVIDIA driver version such as 535.104.05 (none read from this "
                          "node: " +
                              why + ")",
                          "none", {}, FoundIs::kDescription);
    }
    request.driver = *facts.driver_version;
    notes.push_back("driver " + request.driver + " read from nvidia-smi");
  }
  if (request.gpu.empty() && !facts.gpus.empty()) {
    request.gpu = std::to_string(facts.gpus.size()) + "x " + facts.gpus.front().name;
    notes.push_back("GPUs " + request.gpu + " read from nvidia-smi");
  }
  if (read_framework && !facts.frameworks.empty()) {
    const FrameworkFacts& found = facts.frameworks.front();
    request.framework = found.name == "torch" ? "pytorch" : found.name;
    request.framework_version = found.version.substr(0, found.version.find('+'));
    request.framework_version_is_hint = true;
    notes.push_back(found.name + " " + found.version + " read from this node's python3");
  }
  return Status::Ok();
}

std::string RenderDockerfile(const EnvChoice& choice, const EnvRequest& request) {
  std::ostringstream out;
  out << Header(choice, request) << "FROM " << choice.image.Ref() << "\n"
      << "LABEL org.opencontainers.image.base.name=" << Quote(choice.image.Ref()) << "\n"
      << "ENV PYTHONUNBUFFERED=1\n"
      << "WORKDIR /workspace\n"
      << "# The framework imports (no GPU is needed at build time for this check).\n"
      << "RUN python3 -c \"import " << ImportName(choice.image.framework) << "; print("
      << ImportName(choice.image.framework) << ".__version__)\"\n"
      << "CMD [\"bash\"]\n";
  return out.str();
}

std::string RenderAnsiblePlaybook(const EnvChoice& choice, const EnvRequest& request) {
  std::ostringstream out;
  out << "---\n"
      << Header(choice, request) << "# Modules: community.docker.docker_image, "
      << kDockerImageModuleDoc << "\n#          community.docker.docker_container, "
      << kDockerContainerModuleDoc << "\n# Shared memory (ipc_mode: host): " << kSharedMemoryDoc
      << "\n"
      << "- name: Ready the node for training (fulcrum env)\n"
      << "  hosts: all\n"
      << "  become: true\n"
      << "  tasks:\n"
      << "    - name: Pull the pinned image\n"
      << "      community.docker.docker_image:\n"
      << "        name: " << Quote(choice.image.image) << "\n"
      << "        tag: " << Quote(choice.image.tag) << "\n"
      << "        source: pull\n"
      << "    - name: Create the data directory\n"
      << "      ansible.builtin.file:\n"
      << "        path: " << Quote(request.data_dir) << "\n"
      << "        state: directory\n"
      << "        mode: \"0750\"\n"
      << "    - name: Run the training container on every GPU (NVIDIA runtime via device "
         "requests)\n"
      << "      community.docker.docker_container:\n"
      << "        name: " << Quote(request.container_name) << "\n"
      << "        image: " << Quote(choice.image.Ref()) << "\n"
      << "        state: started\n"
      << "        restart_policy: unless-stopped\n"
      << "        command: [\"sleep\", \"infinity\"]\n"
      << "        ipc_mode: host\n"
      << "        device_requests:\n"
      << "          - driver: nvidia\n"
      << "            count: -1\n"
      << "            capabilities:\n"
      << "              - [\"gpu\"]\n"
      << "        volumes:\n"
      << "          - " << Quote(request.data_dir + ":/data") << "\n";
  if (!request.ports.empty()) {
    out << "        published_ports:\n";
    for (int port : request.ports) {
      out << "          - "
          << Quote(request.bind_address + ":" + std::to_string(port) + ":" + std::to_string(port))
          << "\n";
    }
  }
  return out.str();
}

std::string RenderCompose(const EnvChoice& choice, const EnvRequest& request) {
  std::ostringstream out;
  out << Header(choice, request) << "# GPUs: " << kComposeGpuDoc
      << "\n# Shared memory (ipc: host): " << kSharedMemoryDoc << "\n"
      << "services:\n"
      << "  train:\n"
      << "    image: " << Quote(choice.image.Ref()) << "\n"
      << "    container_name: " << Quote(request.container_name) << "\n"
      << "    command: [\"sleep\", \"infinity\"]\n"
      << "    restart: unless-stopped\n"
      << "    ipc: host\n"
      << "    volumes:\n"
      << "      - " << Quote(request.data_dir + ":/data") << "\n";
  if (!request.ports.empty()) {
    out << "    ports:\n";
    for (int port : request.ports) {
      out << "      - "
          << Quote(request.bind_address + ":" + std::to_string(port) + ":" + std::to_string(port))
          << "\n";
    }
  }
  out << "    deploy:\n"
      << "      resources:\n"
      << "        reservations:\n"
      << "          devices:\n"
      << "            - driver: nvidia\n"
      << "              count: all\n"
      << "              capabilities: [gpu]\n";
  return out.str();
}

}  // namespace fulcrum::nodecheck
