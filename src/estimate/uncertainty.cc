#include "estimate/uncertainty.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace fulcrum::estimate {

Result<Realism> ParseRealism(std::string_view name) {
  if (name == "production") return Realism::kProduction;
  if (name == "tuned_benchmark") return Realism::kTunedBenchmark;
  return Status::InvalidInput("--realism: expected production or tuned_benchmark, found '" +
                              std::string(name) + "'");
}

std::string_view RealismName(Realism realism) {
  return realism == Realism::kProduction ? "production" : "tuned_benchmark";
}

namespace {

// Widens `out`'s step band to its union with `band`; whether that moved an end.
bool Widen(StepBand& out, const RatioBand& band) {
  const bool moved = band.p10 < out.step_p10_ratio || band.p90 > out.step_p90_ratio;
  out.step_p10_ratio = std::min(out.step_p10_ratio, band.p10);
  out.step_p90_ratio = std::max(out.step_p90_ratio, band.p90);
  return moved;
}

}  // namespace

StepBand BandFor(const UncertaintyTable& table, const workload::Model& model,
                 workload::Precision precision, int64_t gpus, bool architecture_calibrated,
                 Realism realism) {
  StepBand out;
  out.architecture_calibrated = architecture_calibrated;
  out.realism = realism;
  const bool generic = model.kind == workload::ModelKind::kGeneric;
  const bool kind_known =
      std::any_of(table.points.begin(), table.points.end(),
                  [&](const CalibrationPoint& p) { return p.generic == generic; });
  const double log_params = std::log10(std::max(1.0, workload::ParameterCount(model)));
  const double log_gpus = std::log2(static_cast<double>(std::max<int64_t>(1, gpus)));
  const CalibrationPoint* nearest = nullptr;
  double best = std::numeric_limits<double>::infinity();
  for (const CalibrationPoint& p : table.points) {
    if (kind_known && p.generic != generic) continue;
    const double d =
        std::abs(p.log10_parameters - log_params) + std::abs(p.log2_gpus - log_gpus) / 4.0;
    if (d < best) {
      best = d;
      nearest = &p;
    }
  }
  if (nearest == nullptr || nearest->family < 0 ||
      static_cast<size_t>(nearest->family) >= table.families.size()) {
    return out;
  }
  const FamilyBand& f = table.families[static_cast<size_t>(nearest->family)];
  out.family = f.family;
  out.step_p10_ratio = f.step.p10;
  out.step_p90_ratio = f.step.p90;
  if (!architecture_calibrated) {
    // The sign of a transfer error does not carry over to another chip, its size does.
    const RatioBand& na = f.step_new_architecture;
    const double size =
        std::max(std::log(std::max(na.p90, 1e-9)), -std::log(std::max(na.p10, 1e-9)));
    out.step_p10_ratio = std::min(out.step_p10_ratio, std::exp(-size));
    out.step_p90_ratio = std::max(out.step_p90_ratio, std::exp(size));
  }
  const RatioBand& production = table.production_step;
  if (realism == Realism::kProduction && !generic && production.rows > 0) {
    out.production_widened = Widen(out, production);
  }
  // A mixture-of-experts model, under either realism: the union with the published MoE runs' band
  // (UncertaintyTable::moe_step), as the calibration rows behind the family bands are all dense.
  if (workload::IsMoe(model) && table.moe_step.rows > 0)
    out.moe_widened = Widen(out, table.moe_step);
  // An FP8 run: the union with the published FP8 runs' band (UncertaintyTable::fp8_step).
  if (precision == workload::Precision::kFp8 && table.fp8_step.rows > 0)
    out.fp8_widened = Widen(out, table.fp8_step);
  out.memory_p90_ratio = f.memory.p90;
  return out;
}

}  // namespace fulcrum::estimate
