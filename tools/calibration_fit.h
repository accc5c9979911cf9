// Fitting estimate::TimeCalibration to calibration rows: a deterministic coordinate descent from
// the struct's prior values (the member initialisers of estimate/compute.h) on the mean over
// source families of (median + mean / 2) of |ln(predicted / measured)|, so that a family with
// many rows does not outvote one with few (a family of n rows weighs n / (n + 5), so that one
// or two rows do not count as a whole family), plus 0.1 x the sum of ln(value / prior)^2 over the
// constants, which keeps a constant few rows constrain near its prior. Fitted values are rounded
// to 3 significant digits (what the generated source holds). Pure functions; thread-compatible.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "calibration_data.h"
#include "estimate/compute.h"

namespace fulcrum::calibrate {

// One fitted constant of a parameter struct: its C++ member path (also the generated source's
// assignment target), bounds, and the step scale for values near zero.
template <typename Params>
struct Knob {
  std::string member;  // e.g. "ampere.gemm_max_efficiency"
  std::function<double&(Params&)> ref;
  double lower = 0, upper = 1, scale = 0.1;
};
using FittedConstant = Knob<estimate::TimeCalibration>;

double RoundSignificant(double value, int digits);

// The one fit of every calibration: a deterministic coordinate descent from `start` over the
// knobs (steps of 20 %, 5 %, 1 %, 0.25 % of each value, at least of its scale) minimising
// `objective`, then every knob rounded to 3 significant digits (what generated sources hold).
template <typename Params, typename Objective>
Params CoordinateDescent(Params start, const std::vector<Knob<Params>>& knobs,
                         const Objective& objective) {
  Params best = start;
  double best_objective = objective(best);
  for (const double step : {0.2, 0.05, 0.01, 0.0025}) {
    for (int pass = 0; pass < 60; ++pass) {
      bool improved = false;
      for (const Knob<Params>& k : knobs) {
        for (const double sign : {1.0, -1.0}) {
          Params candidate = best;
          double& x = k.ref(candidate);
          x = std::clamp(x + sign * step * std::max(std::abs(x), k.scale), k.lower, k.upper);
          if (x == k.ref(best)) continue;
          const double value = objective(candidate);
          if (value < best_objective - 1e-12) {
            best = candidate;
            best_objective = value;
            improved = true;
          }
        }
      }
      if (!improved) break;
    }
  }
  for (const Knob<Params>& k : knobs) {
    double& x = k.ref(best);
    x = RoundSignificant(x, 3);
  }
  return best;
}

// For each group: `fit` on every row outside it (the leave-one-group-out fits).
template <typename Row, typename Key, typename FitFn>
auto FitLeavingOut(const std::vector<const Row*>& rows, const std::set<std::string>& groups,
                   const Key& key, const FitFn& fit) {
  std::map<std::string, decltype(fit(rows))> out;
  for (const std::string& group : groups) {
    std::vector<const Row*> rest;
    for (const Row* row : rows) {
      if (key(*row) != group) rest.push_back(row);
    }
    out.emplace(group, fit(rest));
  }
  return out;
}

// The markdown table of fitted constants: the prior (`Params{}`), the fit on all rows, and the
// fit without each group (3 significant digits).
template <typename Params>
std::string ConstantsMarkdown(const std::vector<Knob<Params>>& knobs, const Params& fitted,
                              const std::map<std::string, Params>& left_out) {
  auto value = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", v);
    return std::string(text);
  };
  std::ostringstream out;
  out << "| constant | prior | fitted (all rows) |";
  for (const auto& [group, p] : left_out) out << " without " << group << " |";
  out << "\n|---|---|---|";
  for (size_t i = 0; i < left_out.size(); ++i) out << "---|";
  out << "\n";
  for (const Knob<Params>& k : knobs) {
    Params prior, all = fitted;
    out << "| " << k.member << " | " << value(k.ref(prior)) << " | " << value(k.ref(all)) << " |";
    for (const auto& [group, p] : left_out) {
      Params copy = p;
      out << " " << value(k.ref(copy)) << " |";
    }
    out << "\n";
  }
  return out.str();
}

const std::vector<FittedConstant>& FittedConstants();

// (predicted - measured) / measured, capped at +-10; nullopt when the row has no prediction.
std::optional<double> RelativeError(const CalibrationRow& row,
                                    const estimate::TimeCalibration& calibration);

// The fit on the time rows of `rows` (memory rows carry no fitted constant and are ignored, as
// are rows marked not_fitted).
estimate::TimeCalibration Fit(const std::vector<const CalibrationRow*>& rows);

// Summary of absolute errors.
struct ErrorSummary {
  size_t rows = 0;
  double median = 0, p90 = 0, mean = 0, max = 0;
};
ErrorSummary Summarize(std::vector<double> absolute_errors);

}  // namespace fulcrum::calibrate
