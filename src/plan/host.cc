#include "plan/host.h"

#include <algorithm>
#include <cctype>

namespace fulcrum::plan {
namespace {

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

// Whether `command` has `flag` followed (after '=' or spaces) by true/1 (case-insensitive).
bool FlagIsTrue(std::string_view command, std::string_view flag) {
  for (size_t at = command.find(flag); at != std::string_view::npos;
       at = command.find(flag, at + 1)) {
    size_t v = at + flag.size();
    if (v < command.size() &&
        (std::isalnum(static_cast<unsigned char>(command[v])) || command[v] == '_')) {
      continue;  // a longer flag with this prefix
    }
    while (v < command.size() && (command[v] == '=' || command[v] == ' ' || command[v] == ':' ||
                                  command[v] == '"' || command[v] == '\'')) {
      ++v;
    }
    const std::string_view rest = command.substr(v);
    const auto starts = [&rest](std::string_view word) {
      if (rest.size() < word.size()) return false;
      for (size_t i = 0; i < word.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(rest[i])) != word[i]) return false;
      }
      return true;
    };
    if (starts("true") || starts("1")) return true;
  }
  return false;
}

}  // namespace

double LoadBytesPerParameter(workload::Precision precision) {
  switch (precision) {
    case workload::Precision::kFp32:
    case workload::Precision::kTf32:
      return 4;
    default:
      return 2;
  }
}

bool LoadsOnce(const workload::Training& t, std::string_view command) {
  switch (t.framework) {
    case workload::Framework::kFsdp:
      return FlagIsTrue(command, "fsdp_cpu_ram_efficient_loading") ||
             FlagIsTrue(command, "sync_module_states");
    case workload::Framework::kDeepSpeed:
      return t.zero_stage == 3 && FlagIsTrue(command, "zero3_init_flag");
    default:
      return false;
  }
}

HostNeeds HostNeedsOf(const catalog::Offer& offer, const workload::Model& model,
                      const workload::Training& t, workload::Precision precision,
                      std::string_view command) {
  HostNeeds n;
  n.ram_gib = offer.memory_gib;
  n.vcpus = offer.vcpus;
  const int ranks = std::max(1, offer.gpu_count);
  const double full_gib = workload::ParameterCount(model) * LoadBytesPerParameter(precision) / kGib;
  n.loads_once = LoadsOnce(t, command);
  if (n.loads_once) {
    n.model_load_gib = full_gib;  // on rank 0's node
  } else if (workload::UsesMegatronModel(t.framework)) {
    n.model_load_gib = ranks * full_gib / static_cast<double>(std::max<int64_t>(1, t.tp * t.pp));
  } else {
    n.model_load_gib = ranks * full_gib;
  }
  n.ram_needed_gib = n.model_load_gib + ranks * kPinnedBufferGibPerRank;
  n.vcpus_needed = ranks * kVcpusPerGpu;
  return n;
}

}  // namespace fulcrum::plan
