// `fulcrum env`: writes the node's set-up (see nodecheck/env_setup.h).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "cli/bench_source_options.h"
#include "cli/command.h"
#include "core/paths.h"
#include "core/text_file.h"
#include "nodecheck/env_setup.h"

namespace fulcrum::cli {
namespace {

struct EnvFlags {
  bool json = false;
  std::string framework;
  std::string framework_version;
  std::string driver;
  std::string gpu;
  std::string dockerfile;
  std::string ansible;
  std::string compose;
  nodecheck::EnvRequest request;  // data dir, ports, bind address, container name
  BenchSourceFlags source;
};

// The request from the flags; what they leave out is read from the node (doctor's probes).
Result<nodecheck::EnvRequest> BuildRequest(CliContext& ctx, const EnvFlags& flags,
                                           std::vector<std::string>& notes) {
  nodecheck::EnvRequest request = flags.request;
  request.driver = flags.driver;
  request.gpu = flags.gpu;
  if (!flags.framework.empty()) request.framework = flags.framework;
  request.framework_version = flags.framework_version;
  bool read_framework = flags.framework.empty() && flags.framework_version.empty();
  if (!request.driver.empty() && !request.gpu.empty() && !read_framework) return request;
  FULCRUM_ASSIGN_OR_RETURN(auto cat, catalog::Catalog::Load(DefaultCatalogDir(ctx.catalog_dir)));
  FULCRUM_ASSIGN_OR_RETURN(auto source, MakeBenchSource(flags.source, cat));
  nodecheck::DoctorOptions options;
  options.probe_frameworks = read_framework;
  nodecheck::SystemFacts facts = source->GatherFacts(options);
  FULCRUM_RETURN_IF_ERROR(nodecheck::FillFromNode(facts, read_framework, request, notes));
  return request;
}

nlohmann::json ChoiceJson(const nodecheck::EnvChoice& choice, const nodecheck::EnvRequest& request,
                          const EnvFlags& flags) {
  const nodecheck::ContainerImage& image = choice.image;
  auto path_or_null = [](const std::string& path) {
    return path.empty() ? nlohmann::json(nullptr) : nlohmann::json(path);
  };
  return {{"env",
           {{"driver", request.driver},
            {"max_cuda", choice.max_cuda},
            {"gpu", request.gpu.empty() ? nlohmann::json(nullptr) : nlohmann::json(request.gpu)},
            {"framework", request.framework},
            {"image",
             {{"ref", image.Ref()},
              {"image", image.image},
              {"tag", image.tag},
              {"framework_version", image.framework_version},
              {"cuda_version", image.cuda_version},
              {"min_driver_linux", image.min_driver_linux},
              {"source", image.source}}},
            {"rejected", choice.rejected},
            {"notes", choice.notes},
            {"written",
             {{"dockerfile", path_or_null(flags.dockerfile)},
              {"ansible", path_or_null(flags.ansible)},
              {"compose", path_or_null(flags.compose)}}}}}};
}

void RunEnv(CliContext& ctx, const EnvFlags& flags) {
  std::vector<std::string> notes;
  auto request = BuildRequest(ctx, flags, notes);
  if (!request.ok()) return ReportError(ctx, request.status());
  auto table = nodecheck::LoadDriverTable(DefaultCatalogDir(ctx.catalog_dir));
  if (!table.ok()) return ReportError(ctx, table.status());
  auto images = nodecheck::LoadContainerImages(DefaultCatalogDir(ctx.catalog_dir));
  if (!images.ok()) return ReportError(ctx, images.status());
  auto choice = nodecheck::ChooseImage(*images, *table, *request);
  if (!choice.ok()) return ReportError(ctx, choice.status());
  choice->notes.insert(choice->notes.begin(), notes.begin(), notes.end());

  const std::pair<const std::string*, std::string> files[] = {
      {&flags.dockerfile, nodecheck::RenderDockerfile(*choice, *request)},
      {&flags.ansible, nodecheck::RenderAnsiblePlaybook(*choice, *request)},
      {&flags.compose, nodecheck::RenderCompose(*choice, *request)}};
  for (const auto& [path, text] : files) {
    if (path->empty()) continue;
    if (Status written = WriteTextFile(*path, text); !written.ok())
      return ReportError(ctx, written);
  }
  if (flags.json) return PrintJson(ctx, ChoiceJson(*choice, *request, flags));

  const nodecheck::ContainerImage& image = choice->image;
  ctx.out << "driver  " << request->driver << " runs CUDA <= " << choice->max_cuda
          << " (catalog/cuda_driver.csv)\n"
          << "image   " << image.Ref() << "\n"
          << "        " << image.framework << " " << image.framework_version << ", CUDA "
          << image.cuda_version << ", driver >= " << image.min_driver_linux << "\n"
          << "        source: " << image.source << "\n";
  for (const std::string& note : choice->notes) ctx.out << "note    " << note << "\n";
  for (const std::string& why : choice->rejected) ctx.out << "skipped " << why << "\n";
  bool wrote = false;
  for (const auto& [path, text] : files) {
    if (path->empty()) continue;
    ctx.out << "wrote   " << *path << "\n";
    wrote = true;
  }
  if (!wrote) ctx.out << "\n--dockerfile FILE, --ansible FILE, --compose FILE write the set-up\n";
}

}  // namespace

void RegisterEnv(CLI::App* cmd, CliContext& ctx) {
  auto flags = std::make_shared<EnvFlags>();
  cmd->description(
      "Write the set-up of this node for training in a container: a Dockerfile, an Ansible\n"
      "playbook and a Docker Compose file around one framework image pinned by tag, chosen so\n"
      "that the driver runs its CUDA. The images are the rows of catalog/container_images.csv\n"
      "(NGC PyTorch/JAX release notes, Docker Hub pytorch/pytorch and tensorflow/tensorflow\n"
      "tags, each row sourced); the highest CUDA a driver runs comes from\n"
      "catalog/cuda_driver.csv (CUDA release notes, Table 3). Among the rows of --framework (and\n"
      "--framework-version) that the driver runs, the newest release wins, then the newest "
      "CUDA.\n\n"
      "What is not given is read from this node as `fulcrum doctor` reads it: the driver and the\n"
      "GPUs from nvidia-smi, the framework and its version from python3 (or a sim node with\n"
      "--source sim).\n\n"
      "The playbook (community.docker.docker_image, community.docker.docker_container, as in\n"
      "Debian's `ansible` package) pulls the image, creates --data-dir and runs the container\n"
      "with every GPU (device_requests: driver nvidia, capabilities gpu), the data directory\n"
      "at /data, ipc_mode host (PyTorch's shared memory) and the --port list published on\n"
      "--bind (127.0.0.1 by default). The compose file reserves the GPUs with\n"
      "deploy.resources.reservations.devices (Docker's GPU support page).\n\n"
      "Exit 0 with the image chosen (and the files written); 2 on bad input (an unknown\n"
      "framework or release names the nearest known) or when no image of the table runs on the\n"
      "driver; 1 when a file cannot be written.\n\n"
      "Examples:\n"
      "  fulcrum env --driver 535.104.05 --framework pytorch --dockerfile Dockerfile "
      "--ansible playbook.yml\n"
      "  fulcrum env --driver 470.82.01 --framework pytorch --framework-version 1.12 --json\n"
      "  fulcrum env --compose compose.yaml --data-dir /mnt/data --port 6006 --port 8888\n"
      "  fulcrum env --source sim --sim-gpu A100-SXM4-80GB --framework pytorch");
  cmd->add_flag("--json", flags->json,
                "Print {\"env\": {driver, max_cuda, gpu, framework, image: {ref, image, tag, "
                "framework_version, cuda_version, min_driver_linux, source}, rejected, notes, "
                "written}}");
  cmd->add_option("--driver", flags->driver,
                  "NVIDIA driver version, e.g. 535.104.05 (default: read with nvidia-smi)")
      ->type_name("VER");
  cmd->add_option("--gpu", flags->gpu,
                  "GPU name written into the files' comments (default: read with nvidia-smi)")
      ->type_name("NAME");
  cmd->add_option("--framework", flags->framework,
                  "pytorch, tensorflow or jax (default: the node's python3, else pytorch)")
      ->type_name("NAME");
  cmd->add_option("--framework-version", flags->framework_version,
                  "Release of the framework, matched by whole parts: 2.3 matches 2.3.1 "
                  "(default: the newest that the driver runs)")
      ->type_name("VER");
  cmd->add_option("--dockerfile", flags->dockerfile, "Write a Dockerfile FROM the image here")
      ->type_name("FILE");
  cmd->add_option("--ansible", flags->ansible,
                  "Write an Ansible playbook (community.docker) that pulls and runs the image")
      ->type_name("FILE");
  cmd->add_option("--compose", flags->compose,
                  "Write a Docker Compose file that runs the image with the GPUs")
      ->type_name("FILE");
  cmd->add_option("--data-dir", flags->request.data_dir,
                  "Host directory mounted at /data in the container")
      ->capture_default_str()
      ->type_name("DIR");
  cmd->add_option("--port", flags->request.ports,
                  "Port published from the container, repeatable (default: 6006, TensorBoard)")
      ->type_name("PORT");
  cmd->add_option("--bind", flags->request.bind_address, "Host address the ports are published on")
      ->capture_default_str()
      ->type_name("ADDR");
  cmd->add_option("--name", flags->request.container_name, "Container name")
      ->capture_default_str()
      ->type_name("NAME");
  AddBenchSourceOptions(cmd, flags->source);
  cmd->callback([&ctx, flags] { RunEnv(ctx, *flags); });
}

}  // namespace fulcrum::cli
