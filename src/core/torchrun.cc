#include "core/torchrun.h"

namespace fulcrum {

size_t TorchrunOptionsAt(const std::vector<std::string>& command) {
  if (command.empty()) return 0;
  const std::string program = command[0].substr(command[0].rfind('/') + 1);
  if (program == "torchrun") return 1;
  if (program.rfind("python", 0) == 0 && command.size() >= 3 && command[1] == "-m" &&
      command[2] == "torch.distributed.run")
    return 3;
  return 0;
}

bool HasTorchrunOption(const std::vector<std::string>& command, const std::string& name) {
  std::string underscored = name;
  for (size_t i = 2; i < underscored.size(); ++i) {
    if (underscored[i] == '-') underscored[i] = '_';
  }
  for (const auto& word : command) {
    for (const auto& spelling : {name, underscored}) {
      if (word == spelling || word.rfind(spelling + "=", 0) == 0) return true;
    }
  }
  return false;
}

bool HasTorchrunRendezvous(const std::vector<std::string>& command) {
  return HasTorchrunOption(command, "--standalone") ||
         HasTorchrunOption(command, "--rdzv-endpoint") ||
         HasTorchrunOption(command, "--master-addr");
}

}  // namespace fulcrum
