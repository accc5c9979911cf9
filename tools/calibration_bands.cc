#include "calibration_bands.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "calibration_data.h"
#include "calibration_fit.h"

namespace fulcrum::calibrate {
namespace {

using estimate::RatioBand;
using estimate::TimeCalibration;

// measured / predicted of the row's step time (throughput rows invert) or memory peak.
std::optional<double> Ratio(const CalibrationRow& row, const TimeCalibration& c) {
  const std::optional<double> e = RelativeError(row, c);
  if (!e) return std::nullopt;
  const double predicted_over_measured = std::max(1e-3, 1.0 + *e);
  const bool ratio_of_times = row.quantity == Quantity::kTokensPerSecondPerGpu ||
                              row.quantity == Quantity::kSamplesPerSecondTotal;
  return ratio_of_times ? predicted_over_measured : 1.0 / predicted_over_measured;
}

bool IsGeneric(const CalibrationRow& row) {
  return row.input && row.input->model.kind == workload::ModelKind::kGeneric;
}

std::string BandSource(const RatioBand& b) {
  std::ostringstream out;  // (operator+ chains trip g++ 12's -Wrestrict false positive)
  out << "{" << Format("%.3g", b.p10) << ", " << Format("%.3g", b.p90) << ", " << b.rows << "}";
  return out.str();
}

}  // namespace

RatioBand BandOf(std::vector<double> ratios) {
  RatioBand band;
  band.rows = static_cast<int>(ratios.size());
  if (ratios.empty()) return band;
  std::sort(ratios.begin(), ratios.end());
  const auto rank = [&](double q) {
    const double n = static_cast<double>(ratios.size());
    return ratios[static_cast<size_t>(std::max(1.0, std::ceil(q * n))) - 1];
  };
  band.p10 = rank(0.1);
  band.p90 = rank(0.9);
  return band;
}

std::string ArchitectureOf(const CalibrationRow& row) {
  return row.input ? row.input->gpu.architecture : "";
}

GeneratedBands ComputeBands(const std::vector<CalibrationRow>& rows, const TimeCalibration& fitted,
                            const std::map<std::string, TimeCalibration>& left_out_family,
                            const std::map<std::string, TimeCalibration>& left_out_architecture) {
  // Ratios per (family, quantity) and pooled per model kind (index 0 transformer, 1 generic).
  struct Ratios {
    std::vector<double> step, step_new_architecture, memory;
  };
  std::map<std::string, Ratios> by_family;
  std::map<std::string, bool> family_generic;
  Ratios pooled[2];
  GeneratedBands out;
  std::map<std::string, int> index;
  // A family with rows of both model kinds (DeepLearningExamples: CNNs and BERT) gets one band
  // per kind, and generic (FLOPs-only) models one per network: their error belongs to the
  // network (EfficientNet's memory-bound depthwise convolutions), which the FLOPs-only model does
  // not see ("dle/resnet50", "dle/transformer").
  std::map<std::string, std::set<bool>> kinds_of;
  for (const CalibrationRow& row : rows) {
    if (row.input && !row.IsMemory()) kinds_of[row.family].insert(IsGeneric(row));
  }
  const auto key = [&](const CalibrationRow& row) {
    if (IsGeneric(row)) return row.family + "/" + row.model.substr(0, row.model.find(" ("));
    if (kinds_of[row.family].size() < 2) return row.family;
    return row.family + "/transformer";
  };
  for (const CalibrationRow& row : rows) {
    if (row.input) by_family[key(row)];
  }
  for (auto& [family, ratios] : by_family) {
    index[family] = static_cast<int>(out.families.size());
    out.families.push_back({family, {}, {}, {}});
  }
  for (const CalibrationRow& row : rows) {
    if (!row.input) continue;
    const int kind = IsGeneric(row) ? 1 : 0;
    Ratios& mine = by_family[key(row)];
    if (row.IsMemory()) {
      if (const std::optional<double> r = Ratio(row, fitted)) {
        mine.memory.push_back(*r);
        pooled[kind].memory.push_back(*r);
      }
      continue;
    }
    family_generic[key(row)] = kind == 1;
    const auto family_fit = left_out_family.find(row.family);
    const auto architecture_fit = left_out_architecture.find(ArchitectureOf(row));
    const std::optional<double> r =
        Ratio(row, family_fit == left_out_family.end() ? fitted : family_fit->second);
    if (!r) continue;
    mine.step.push_back(*r);
    pooled[kind].step.push_back(*r);
    // As an architecture without rows is predicted: its constants are TimeCalibration::other
    // (the row's architecture renamed to one the time model does not list), the rest fitted
    // without the architecture's rows.
    CalibrationRow unknown = row;
    unknown.input->gpu.architecture = "(no calibration rows)";
    const std::optional<double> a =
        Ratio(unknown,
              architecture_fit == left_out_architecture.end() ? fitted : architecture_fit->second);
    if (a) {
      mine.step_new_architecture.push_back(*a);
      pooled[kind].step_new_architecture.push_back(*a);
    }
    estimate::CalibrationPoint p;
    p.family = index[key(row)];
    p.generic = kind == 1;
    p.log10_parameters = std::log10(std::max(1.0, workload::ParameterCount(row.input->model)));
    p.log2_gpus = std::log2(static_cast<double>(std::max<int64_t>(1, row.input->gpus)));
    // Rows that differ only in what the resemblance does not see (precision, batch) are one
    // point: the nearest row is the same.
    const bool seen = std::any_of(out.points.begin(), out.points.end(), [&](const auto& q) {
      return q.family == p.family && q.generic == p.generic &&
             q.log10_parameters == p.log10_parameters && q.log2_gpus == p.log2_gpus;
    });
    if (!seen) out.points.push_back(p);
  }
  // Memory rows exist for transformers only so far: a kind without any pools over all of them.
  std::vector<double> all_memory = pooled[0].memory;
  all_memory.insert(all_memory.end(), pooled[1].memory.begin(), pooled[1].memory.end());
  for (GeneratedFamilyBand& f : out.families) {
    const Ratios& mine = by_family[f.family];
    const Ratios& kind = pooled[family_generic[f.family] ? 1 : 0];
    auto choose = [](const std::vector<double>& own, const std::vector<double>& pool,
                     bool* pooled_out) {
      *pooled_out = static_cast<int>(own.size()) < kMinRowsForBand;
      return BandOf(*pooled_out ? pool : own);
    };
    f.step = choose(mine.step, kind.step, &f.step_pooled);
    f.step_new_architecture = choose(mine.step_new_architecture, kind.step_new_architecture,
                                     &f.step_new_architecture_pooled);
    f.memory =
        choose(mine.memory, kind.memory.empty() ? all_memory : kind.memory, &f.memory_pooled);
  }
  return out;
}

std::string UncertaintySource(const GeneratedBands& bands) {
  std::ostringstream out;
  out << "// Generated by fulcrum-calibrate (tools/calibrate.cc, tools/calibration_bands.cc) from\n"
         "// data/calibration/; do not edit: rerun `build/fulcrum-calibrate` after changing the "
         "data "
         "or the\n"
         "// models. Ratios measured / predicted {p10, p90, rows}; the bands per family are "
         "explained in\n"
         "// docs/ACCURACY.md.\n"
         "#include \"estimate/uncertainty.h\"\n\n"
         "namespace fulcrum::estimate {\n\n"
         "const UncertaintyTable& DefaultUncertaintyTable() {\n"
         "  // One family, one calibration row per line.\n"
         "  // clang-format off\n"
         "  static const UncertaintyTable kTable = {\n"
         "      // family, step (family left out), step (as an unlisted architecture), memory\n"
         "      {\n";
  for (const GeneratedFamilyBand& f : bands.families) {
    out << "          {\"" << f.family << "\", " << BandSource(f.step) << ", "
        << BandSource(f.step_new_architecture) << ", " << BandSource(f.memory) << "},\n";
  }
  out << "      },\n"
         "      // family index, generic, log10 parameters, log2 GPUs (one per distinct step-time "
         "row)\n"
         "      {\n";
  for (const estimate::CalibrationPoint& p : bands.points) {
    out << "          {" << p.family << ", " << (p.generic ? "true" : "false") << ", "
        << Format("%.3f", p.log10_parameters) << ", " << Format("%.3f", p.log2_gpus) << "},\n";
  }
  out << "      },\n"
         "      // production runs (published_runs.csv), step time\n"
         "      "
      << BandSource(bands.production_step)
      << ",\n"
         "      // mixture-of-experts runs (published_runs.csv), step time\n"
         "      "
      << BandSource(bands.moe_step)
      << ",\n"
         "      // FP8 runs (published_runs.csv), step time\n"
         "      "
      << BandSource(bands.fp8_step)
      << "};\n"
         "  // clang-format on\n"
         "  return kTable;\n"
         "}\n\n"
         "}  // namespace fulcrum::estimate\n";
  return out.str();
}

std::string UncertaintyMarkdown(const GeneratedBands& bands) {
  std::ostringstream out;
  out << "## Uncertainty bands\n\n"
         "What `estimate --json` reports as `time.step_seconds_p10` / `time.step_seconds_p90` and "
         "`memory.peak_bytes_per_gpu_p90`, and what `plan` scales its P90 time with: quantiles "
         "(nearest rank) of measured / predicted over the family's rows, step time scored by the "
         "fit without the family (left out), or predicted as a GPU without calibration rows is "
         "(new architecture: the `other` efficiency constants, the rest fitted without the row's "
         "architecture). Where the GPU's architecture has no calibration row the band takes the "
         "larger new-architecture tail both ways (P90 = e^size, P10 = e^-size with size the "
         "larger of ln P90 and -ln P10): which way a chip without rows errs is not known. A setup "
         "takes the band of the family of the calibration row it resembles most (same model "
         "kind, nearest parameter and GPU counts); generic (FLOPs-only) models have one band per "
         "network, since their error belongs to the network. A family with fewer than "
      << kMinRowsForBand
      << " rows for a quantity takes the pooled band of its model kind (marked *).\n\n"
         "| family | step P10 | step P90 | new-architecture P10 | new-architecture P90 | "
         "memory P90 |\n|---|---|---|---|---|---|\n";
  auto cell = [](const RatioBand& b, double v, bool pooled) {
    std::ostringstream cell;
    cell << Format("%.2f", v) << " (" << b.rows << (pooled ? "*" : "") << ")";
    return cell.str();
  };
  for (const GeneratedFamilyBand& f : bands.families) {
    out << "| " << f.family << " | " << cell(f.step, f.step.p10, f.step_pooled) << " | "
        << cell(f.step, f.step.p90, f.step_pooled) << " | "
        << cell(f.step_new_architecture, f.step_new_architecture.p10,
                f.step_new_architecture_pooled)
        << " | "
        << cell(f.step_new_architecture, f.step_new_architecture.p90,
                f.step_new_architecture_pooled)
        << " | " << cell(f.memory, f.memory.p90, f.memory_pooled) << " |\n";
  }
  const RatioBand& p = bands.production_step;
  out << "\n**Production runs.** The families' bands come mostly from tuned benchmark tables "
         "(MosaicML's, NVIDIA's, Megatron's). Production runs of the same shape mostly fall short "
         "of them (data loading, checkpoints, evaluation, stragglers, settings less tuned than "
         "a benchmark's), and some report more than the benchmark-fitted model gives. So for a "
         "transformer `estimate` (by default, "
         "`--realism production`) and `plan` quote the union of the family's band and the "
         "production band: the quantiles of measured / predicted step time over the "
      << p.rows
      << " production runs of the \"Published runs\" table below (runs that trained a released "
         "model, each with its source), under the fitted constants: P10 "
      << Format("%.2f", p.p10) << ", P90 " << Format("%.2f", p.p90)
      << ". `estimate --realism tuned_benchmark` reports the family's band alone. That table "
         "scores each production run with the production band of the other runs (left out).\n";
  const RatioBand& moe = bands.moe_step;
  out << "\n**Mixture of experts.** Every calibration row behind the family bands is a dense "
         "model, so what a MoE layer adds is checked only by the published MoE runs. The estimate "
         "counts the experts' GEMMs at the shapes the router's balanced load gives them, the "
         "all-to-all at the fitted network efficiency (fitted on all-reduce rows; across nodes "
         "each GPU sends what its peers on other nodes get through its own share of the node's "
         "network, estimate/compute.h AllToAllGroupSeconds; under Megatron-Core's flex dispatcher "
         "each token goes once to each other node it has experts on, FlexDispatchSeconds), and "
         "the token "
         "permutation's traffic as Megatron-Core's alltoall dispatcher moves it (7 k h + h "
         "elements per token per MoE layer each way; estimate/compute.h MoePermutationElements); "
         "it does not count the FP8 casts of each expert's inputs apart from the GEMM rate fitted "
         "on dense layers, the launches of per-expert kernels, or how much of the all-to-all "
         "Megatron's overlap really hides"
      << (moe.p10 > 1 ? ", and these runs all come out slower than estimated" : "")
      << ". They are the " << moe.rows
      << " published runs of MoE models in the table below. For a MoE model `estimate` and "
         "`plan` quote, under either realism, the union of the band above with theirs: P10 "
      << Format("%.2f", moe.p10) << ", P90 " << Format("%.2f", moe.p90)
      << " (measured / predicted step time under the fitted constants). The table scores each "
         "MoE run with the band of the other MoE runs (left out).\n";
  const RatioBand& fp8 = bands.fp8_step;
  out << "\n**FP8.** The calibration rows hold two FP8 runs (Megatron-Bridge's Llama 3 70B and "
         "Llama 3.1 405B on H100), which fit the FP8 GEMM rate (hopper.fp8_gemm_max_efficiency) "
         "that every FP8 estimate takes; the FP8 rate of another release, model or layout is "
         "checked only by the published FP8 runs, and NeMo 24.07's own FP8 benchmarks are each "
         "reproduced by a rate of its own, far apart (the last column of \"Published runs\" "
         "below). "
         "They are the "
      << fp8.rows
      << " published FP8 runs in the table below. For an FP8 run `estimate` and `plan` quote, "
         "under either realism, the union of the band above with theirs: P10 "
      << Format("%.2f", fp8.p10) << ", P90 " << Format("%.2f", fp8.p90)
      << " (measured / predicted step time under the fitted constants). The table scores each "
         "FP8 run with the band of the other FP8 runs (left out).\n";
  return out.str();
}

}  // namespace fulcrum::calibrate
