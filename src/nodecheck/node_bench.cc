#include "nodecheck/node_bench.h"

#include <filesystem>

namespace fulcrum::nodecheck {
namespace {

nlohmann::json Optional(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

Result<nlohmann::json> RunNodeBench(GpuBenchSource& source,
                                    const std::vector<Datasheet>& datasheets,
                                    const NodeBenchOptions& options,
                                    const std::function<void(double)>& disk_progress) {
  nlohmann::json result;
  result["source"] = source.kind();
  result["gpu"] = nullptr;
  result["gpu_skipped_reason"] = nullptr;
  if (options.skip_gpu) {
    result["gpu_skipped_reason"] = "skipped by --skip-gpu";
  } else {
    FULCRUM_ASSIGN_OR_RETURN(GpuBenchRun run, source.RunGpuBench(options.gpu));
    if (run.skipped_reason) {
      result["gpu_skipped_reason"] = *run.skipped_reason;
    } else {
      auto raw = nlohmann::json::parse(run.json_text, nullptr, false);
      const Datasheet* sheet = nullptr;
      if (raw.is_object() && raw.contains("device") && raw["device"].is_object()) {
        auto index = MatchDatasheet(raw["device"].value("name", ""),
                                    raw["device"].value("memory_bytes", 0.0), datasheets);
        if (index) sheet = &datasheets[*index];
      }
      FULCRUM_ASSIGN_OR_RETURN(result["gpu"], BuildGpuReport(run.json_text, sheet));
    }
  }
  result["disk"] = nullptr;
  if (!options.skip_disk) {
    FULCRUM_ASSIGN_OR_RETURN(DiskBenchResult disk, RunDiskBench(options.disk, disk_progress));
    std::error_code ec;
    result["disk"] = {
        {"path",
         std::filesystem::weakly_canonical(std::filesystem::absolute(disk.path, ec), ec).string()},
        {"written_bytes", disk.written_bytes},
        {"seconds", disk.seconds},
        {"write_bytes_per_second", disk.write_bytes_per_second},
        {"checkpoint_bytes", Optional(disk.checkpoint_bytes)},
        {"checkpoint_seconds", Optional(disk.checkpoint_seconds)},
        {"free_bytes", Optional(disk.free_bytes)}};
  }
  return result;
}

}  // namespace fulcrum::nodecheck
