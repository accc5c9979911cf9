// `fulcrum spot`: what a job really costs on spot capacity (Monte Carlo over preemptions, per
// policy) and `fulcrum spot interval`: the optimum checkpoint interval (Young, Daly).
#include <cmath>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/parse.h"
#include "core/paths.h"
#include "core/table.h"
#include "spot/interval.h"
#include "spot/job_estimate.h"
#include "spot/simulator.h"
#include "spot/spot_catalog.h"

namespace fulcrum::cli {

namespace {

using nlohmann::json;

constexpr double kMinute = 60;
constexpr double kHour = 3600;

Result<double> FlagDuration(const std::string& text, const char* flag) {
  auto seconds = ParseDurationSeconds(text);
  if (!seconds.ok()) return seconds.status().WithContext(flag);
  // The simulation's run time grows with the work: durations are bounded (10 years).
  if (!std::isfinite(*seconds) || *seconds > spot::kMaxJobSeconds) {
    return Status::InvalidInput(std::string(flag) + ": " + text +
                                " is beyond the limit of 10 years (87600h)");
  }
  return *seconds;
}

// Where the checkpoint write time comes from: given, or model size / storage bandwidth.
struct CheckpointCostFlags {
  // PyTorch DCP blog (calibration README): a 7 B model's synchronous save stalled 148.8 s.
  std::string cost = "148.8s";
  std::string params;           // "7B"
  double bytes_per_param = 14;  // weights + optimizer, mixed precision (calibration README)
  std::string storage;          // kind in catalog/storage.csv
  std::string write_bandwidth;  // bytes per second, e.g. "500MB"
  CLI::Option* cost_option = nullptr;

  void Add(CLI::App* cmd) {
    cost_option =
        cmd->add_option("--checkpoint-cost", cost,
                        "Time to write one checkpoint (default 148.8s: PyTorch DCP blog, a 7B "
                        "model's synchronous save); or give --params")
            ->type_name("DURATION");
    cmd->add_option("--params", params,
                    "Model parameter count (e.g. 7B): checkpoint cost = params x "
                    "--bytes-per-param / storage write bandwidth")
        ->type_name("COUNT")
        ->excludes(cost_option);
    cmd->add_option("--bytes-per-param", bytes_per_param,
                    "Checkpoint bytes per parameter (default 14: weights + Adam state in mixed "
                    "precision)")
        ->type_name("BYTES");
    cmd->add_option("--storage", storage,
                    "Storage kind from catalog/storage.csv (default: the row marked default, "
                    "ebs-gp3 at 125 MiB/s)")
        ->type_name("KIND");
    cmd->add_option("--write-bandwidth", write_bandwidth,
                    "Measured storage write bandwidth per second (e.g. 500MB, 1.2GiB); overrides "
                    "--storage")
        ->type_name("BYTES");
  }

  Result<double> Seconds(const std::string& catalog_dir) const {
    if (params.empty()) return FlagDuration(cost, "--checkpoint-cost");
    auto count = ParseCount(params);
    if (!count.ok()) return count.status().WithContext("--params");
    double bandwidth = 0;
    if (!write_bandwidth.empty()) {
      auto bytes = ParseBytes(write_bandwidth);
      if (!bytes.ok()) return bytes.status().WithContext("--write-bandwidth");
      bandwidth = *bytes;
    } else {
      FULCRUM_ASSIGN_OR_RETURN(auto kinds, spot::LoadStorageKinds(catalog_dir));
      FULCRUM_ASSIGN_OR_RETURN(auto kind, spot::FindStorageKind(kinds, storage));
      bandwidth = kind.write_bytes_per_second;
    }
    return spot::CheckpointCostSeconds(*count, bytes_per_param, bandwidth);
  }
};

// ----- fulcrum spot interval ---------------------------------------------------------------

struct IntervalFlags {
  CheckpointCostFlags cost;
  std::string restart = "0s";
  std::string mtbf;
  std::string band;
  bool json = false;
};

Status RunInterval(CliContext& ctx, const IntervalFlags& f) {
  const std::string catalog = DefaultCatalogDir(ctx.catalog_dir);
  FULCRUM_ASSIGN_OR_RETURN(double delta, f.cost.Seconds(catalog));
  FULCRUM_ASSIGN_OR_RETURN(double restart, FlagDuration(f.restart, "--restart-cost"));
  double mtbf = 0;
  if (!f.mtbf.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(mtbf, FlagDuration(f.mtbf, "--mtbf"));
  } else if (!f.band.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(auto bands, spot::LoadSpotBands(catalog));
    FULCRUM_ASSIGN_OR_RETURN(auto band, spot::FindSpotBand(bands, f.band));
    mtbf = spot::MttiSecondsFromMonthlyPct(band.assumed_pct_per_month);
  } else {
    return Status::InvalidInput("give --mtbf DURATION (or --band NAME)");
  }
  if (!(mtbf > 0) || !(delta > 0)) {
    return Status::InvalidInput("--mtbf and the checkpoint cost must be positive");
  }
  const double young = spot::YoungIntervalSeconds(delta, mtbf);
  const double daly = spot::DalyIntervalSeconds(delta, mtbf);
  const double overhead = spot::OverheadFraction(daly, delta, restart, mtbf);
  if (f.json) {
    PrintJson(ctx,
              {{"young_minutes", young / kMinute},
               {"daly_minutes", daly / kMinute},
               {"overhead_fraction", overhead},
               {"young_overhead_fraction", spot::OverheadFraction(young, delta, restart, mtbf)},
               {"checkpoint_cost_minutes", delta / kMinute},
               {"restart_cost_minutes", restart / kMinute},
               {"mtbf_hours", mtbf / kHour}});
    return Status::Ok();
  }
  ctx.out << "Checkpoint interval for: checkpoint write " << FormatDuration(delta) << ", restart "
          << FormatDuration(restart) << ", mean time between failures " << FormatDuration(mtbf)
          << "\n\n";
  Table table({"formula", "interval min", "overhead %"},
              {Align::kLeft, Align::kRight, Align::kRight});
  table.AddRow({"Young (1974)", FormatNumber(young / kMinute, 1),
                FormatNumber(100 * spot::OverheadFraction(young, delta, restart, mtbf), 1)});
  table.AddRow({"Daly (2006)", FormatNumber(daly / kMinute, 1), FormatNumber(100 * overhead, 1)});
  ctx.out << table.Render()
          << "\noverhead = checkpoint/interval + (interval/2 + restart)/MTBF (first order)\n";
  return Status::Ok();
}

void RegisterInterval(CLI::App* spot_cmd, CliContext& ctx) {
  auto* cmd = spot_cmd->add_subcommand(
      "interval", "Optimum checkpoint interval (Young, Daly) and the expected overhead");
  cmd->footer(
      "Young (1974): sqrt(2*delta*M); Daly (2006, eq. 37): the higher-order optimum; overhead "
      "fraction (first order): delta/tau + (tau/2 + R)/M at Daly's interval.\n\nExamples:\n  "
      "fulcrum spot interval --checkpoint-cost 5m --restart-cost 10m --mtbf 24h --json");
  auto f = std::make_shared<IntervalFlags>();
  f->cost.Add(cmd);
  cmd->add_option("--restart-cost", f->restart, "Time to restart from a checkpoint (default 0s)")
      ->type_name("DURATION");
  auto* mtbf =
      cmd->add_option("--mtbf", f->mtbf, "Mean time between failures or preemptions (e.g. 24h)")
          ->type_name("DURATION");
  cmd->add_option("--band", f->band,
                  "Instead of --mtbf: an interruption band of catalog/spot_bands.csv (under-5, "
                  "5-10, 10-15, 15-20, over-20 %/month)")
      ->type_name("NAME")
      ->excludes(mtbf);
  cmd->add_flag("--json", f->json,
                "Print {\"young_minutes\", \"daly_minutes\", \"overhead_fraction\", ...}");
  cmd->callback([&ctx, f] {
    Status status = RunInterval(ctx, *f);
    if (!status.ok()) ReportError(ctx, status);
  });
}

// ----- fulcrum spot -----------------------------------------------------------------------

struct SpotFlags {
  std::string work, deadline, changeover;
  double on_demand_price = -1, spot_price = -1;
  std::string trace, mtti, band, outage = "0s";
  std::string policy = "all";
  std::string interval = "auto";
  CheckpointCostFlags cost;
  std::string restart = "0s";
  // AWS: 120 s notice, instance metadata polled every 5 s (calibration README).
  std::string notice = "120s", poll = "5s", margin = "10s";
  // AWS and GCP bill per second with a 60 s minimum (calibration README).
  std::string granularity = "1s", minimum = "60s";
  int trials = 10000;
  uint64_t seed = 1;
  int threads = 0;
  bool json = false;
};

struct ModelChoice {
  spot::PreemptionModel model;
  json description;
  std::string text;
};

Result<ModelChoice> ChooseModel(const SpotFlags& f, const std::string& catalog) {
  if (!f.trace.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(spot::Trace trace, spot::LoadTrace(f.trace));
    ModelChoice c{spot::PreemptionModel::FromTrace(trace), {}, ""};
    const double mtti = c.model.MeanTimeToInterruptionSeconds();
    c.description = {{"kind", "trace"},
                     {"file", f.trace},
                     {"ticks", trace.counts.size()},
                     {"gap_seconds", trace.gap_seconds},
                     {"available_fraction", c.model.AvailableFraction()},
                     {"mtti_hours", std::isfinite(mtti) ? json(mtti / kHour) : json(nullptr)}};
    c.text = "trace " + f.trace + " (" + std::to_string(trace.counts.size()) + " ticks of " +
             FormatDuration(trace.gap_seconds) + ", spot available " +
             FormatNumber(100 * c.model.AvailableFraction(), 1) + " % of the time)";
    return c;
  }
  FULCRUM_ASSIGN_OR_RETURN(double outage, FlagDuration(f.outage, "--outage-mean"));
  double mtti = 0;
  std::string origin;
  if (!f.mtti.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(mtti, FlagDuration(f.mtti, "--mtti"));
    origin = "given";
  } else {
    FULCRUM_ASSIGN_OR_RETURN(auto bands, spot::LoadSpotBands(catalog));
    FULCRUM_ASSIGN_OR_RETURN(auto band, spot::FindSpotBand(bands, f.band));
    mtti = spot::MttiSecondsFromMonthlyPct(band.assumed_pct_per_month);
    origin = "band " + band.label + " per month (" + band.band + ")";
  }
  FULCRUM_ASSIGN_OR_RETURN(auto model, spot::PreemptionModel::Exponential(mtti, outage));
  ModelChoice c{model, {}, ""};
  c.description = {{"kind", "exponential"},
                   {"mtti_hours", mtti / kHour},
                   {"mtti_origin", origin},
                   {"outage_mean_hours", outage / kHour}};
  c.text = "exponential, mean time to interruption " + FormatDuration(mtti) + " (" + origin +
           "), outage mean " + FormatDuration(outage);
  return c;
}

Result<spot::JobParams> BuildJob(const SpotFlags& f, const std::string& catalog) {
  spot::JobParams job;
  FULCRUM_ASSIGN_OR_RETURN(job.work_seconds, FlagDuration(f.work, "--work"));
  FULCRUM_ASSIGN_OR_RETURN(job.deadline_seconds, FlagDuration(f.deadline, "--deadline"));
  FULCRUM_ASSIGN_OR_RETURN(job.changeover_seconds, FlagDuration(f.changeover, "--changeover"));
  FULCRUM_ASSIGN_OR_RETURN(job.restart_seconds, FlagDuration(f.restart, "--restart-cost"));
  FULCRUM_ASSIGN_OR_RETURN(job.checkpoint_cost_seconds, f.cost.Seconds(catalog));
  FULCRUM_ASSIGN_OR_RETURN(job.notice.notice_seconds, FlagDuration(f.notice, "--notice"));
  FULCRUM_ASSIGN_OR_RETURN(job.notice.poll_interval_seconds,
                           FlagDuration(f.poll, "--poll-interval"));
  FULCRUM_ASSIGN_OR_RETURN(job.notice.margin_seconds, FlagDuration(f.margin, "--notice-margin"));
  FULCRUM_ASSIGN_OR_RETURN(job.billing_granularity_seconds,
                           FlagDuration(f.granularity, "--billing-granularity"));
  FULCRUM_ASSIGN_OR_RETURN(job.minimum_billed_seconds,
                           FlagDuration(f.minimum, "--billing-minimum"));
  job.on_demand_usd_per_hour = f.on_demand_price;
  job.spot_usd_per_hour = f.spot_price;
  return job;
}

json PolicyJson(const spot::PolicySummary& s) {
  return {{"policy", spot::PolicyName(s.policy)},
          {"mean_cost_usd", s.mean_cost_usd},
          {"p50_cost_usd", s.p50_cost_usd},
          {"p90_cost_usd", s.p90_cost_usd},
          {"mean_hours", s.mean_hours},
          {"p90_hours", s.p90_hours},
          {"deadline_met_fraction", s.deadline_met_fraction},
          {"spot_hours", s.spot_hours},
          {"on_demand_hours", s.on_demand_hours},
          {"preemptions_mean", s.preemptions_mean},
          {"lost_work_hours_mean", s.lost_work_hours_mean}};
}

Status RunSpot(CliContext& ctx, const SpotFlags& f) {
  for (const auto& [value, flag] : {std::pair{&f.work, "--work"},
                                    {&f.deadline, "--deadline"},
                                    {&f.changeover, "--changeover"}}) {
    if (value->empty()) return Status::InvalidInput(std::string(flag) + " is required");
  }
  if (f.on_demand_price < 0) return Status::InvalidInput("--on-demand-price is required (USD/h)");
  if (f.spot_price < 0) return Status::InvalidInput("--spot-price is required (USD/h)");
  const std::string catalog = DefaultCatalogDir(ctx.catalog_dir);
  FULCRUM_ASSIGN_OR_RETURN(spot::JobParams job, BuildJob(f, catalog));
  FULCRUM_ASSIGN_OR_RETURN(ModelChoice model, ChooseModel(f, catalog));
  std::string interval_origin = "given";
  if (f.interval == "auto") {
    job.checkpoint_interval_seconds = spot::AutoCheckpointIntervalSeconds(
        job.checkpoint_cost_seconds, model.model.MeanTimeToInterruptionSeconds(), job.notice);
    interval_origin = std::isfinite(job.checkpoint_interval_seconds)
                          ? "Daly"
                          : (spot::NoticeCoversCheckpoint(job.notice, job.checkpoint_cost_seconds)
                                 ? "none: a checkpoint fits in the notice"
                                 : "none: no preemptions");
  } else {
    FULCRUM_ASSIGN_OR_RETURN(job.checkpoint_interval_seconds,
                             FlagDuration(f.interval, "--checkpoint-interval"));
  }
  std::vector<spot::Policy> policies;
  if (f.policy == "all") {
    policies = {spot::Policy::kOnDemand, spot::Policy::kGreedy, spot::Policy::kUniformProgress};
  } else {
    FULCRUM_ASSIGN_OR_RETURN(spot::Policy p, spot::ParsePolicy(f.policy));
    policies = {p};
  }
  spot::SimulationOptions options;
  options.trials = f.trials;
  options.seed = f.seed;
  options.threads = f.threads;
  std::vector<spot::PolicySummary> summaries;
  for (spot::Policy p : policies) {
    FULCRUM_ASSIGN_OR_RETURN(auto s, spot::Simulate(job, model.model, p, options));
    summaries.push_back(s);
  }
  const bool has_interval = std::isfinite(job.checkpoint_interval_seconds);
  const bool covered = spot::NoticeCoversCheckpoint(job.notice, job.checkpoint_cost_seconds);
  if (f.json) {
    json doc;
    doc["policies"] = json::array();
    for (const auto& s : summaries) doc["policies"].push_back(PolicyJson(s));
    doc["checkpoint_interval_minutes"] =
        has_interval ? json(job.checkpoint_interval_seconds / kMinute) : json(nullptr);
    doc["checkpoint_interval_origin"] = interval_origin;
    doc["checkpoint_cost_minutes"] = job.checkpoint_cost_seconds / kMinute;
    doc["notice_covers_checkpoint"] = covered;
    doc["preemption_model"] = model.description;
    doc["trials"] = f.trials;
    doc["seed"] = f.seed;
    PrintJson(ctx, doc);
    return Status::Ok();
  }
  ctx.out << "Job: " << FormatDuration(job.work_seconds) << " of work, deadline "
          << FormatDuration(job.deadline_seconds) << ", changeover "
          << FormatDuration(job.changeover_seconds) << "; on-demand $" << f.on_demand_price
          << "/h, spot $" << f.spot_price << "/h\n"
          << "Preemptions: " << model.text << "\n"
          << "Checkpoints: cost " << FormatDuration(job.checkpoint_cost_seconds) << ", every "
          << (has_interval ? FormatDuration(job.checkpoint_interval_seconds) : std::string("-"))
          << " (" << interval_origin << "); notice " << FormatDuration(job.notice.notice_seconds)
          << (covered ? " fits" : " does not fit") << " a checkpoint\n"
          << f.trials << " trials, seed " << f.seed << "\n\n";
  Table table({"policy", "mean $", "p50 $", "p90 $", "mean h", "p90 h", "met %", "spot h",
               "on-demand h", "preempt"},
              {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kRight,
               Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kRight});
  for (const auto& s : summaries) {
    table.AddRow({std::string(spot::PolicyName(s.policy)), FormatNumber(s.mean_cost_usd, 2),
                  FormatNumber(s.p50_cost_usd, 2), FormatNumber(s.p90_cost_usd, 2),
                  FormatNumber(s.mean_hours, 1), FormatNumber(s.p90_hours, 1),
                  FormatNumber(100 * s.deadline_met_fraction, 1), FormatNumber(s.spot_hours, 1),
                  FormatNumber(s.on_demand_hours, 1), FormatNumber(s.preemptions_mean, 2)});
  }
  ctx.out << table.Render();
  if (job.deadline_seconds < job.work_seconds) {
    ctx.out << "\nThe deadline is shorter than the work: no policy can meet it.\n";
  }
  return Status::Ok();
}

void AddSpotOptions(CLI::App* cmd, SpotFlags& f) {
  cmd->add_option("--work", f.work, "Compute the job needs (required), e.g. 48h")
      ->type_name("DURATION");
  cmd->add_option("--deadline", f.deadline, "Deadline from the start (required), e.g. 52h")
      ->type_name("DURATION");
  cmd->add_option("--on-demand-price", f.on_demand_price,
                  "On-demand price, USD per hour (required)")
      ->type_name("USD");
  cmd->add_option("--spot-price", f.spot_price, "Spot price, USD per hour (required)")
      ->type_name("USD");
  cmd->add_option("--changeover", f.changeover,
                  "Delay of every switch or relaunch: launch + set-up (required), e.g. 12m")
      ->type_name("DURATION");
  auto* trace = cmd->add_option("--trace", f.trace,
                                "Availability trace {\"metadata\": {\"gap_seconds\": N}, "
                                "\"data\": [count, ...]}; the start is drawn uniformly, the trace "
                                "wraps")
                    ->type_name("FILE");
  auto* mtti = cmd->add_option("--mtti", f.mtti,
                               "Exponential preemptions with this mean time to interruption")
                   ->type_name("DURATION")
                   ->excludes(trace);
  cmd->add_option("--band", f.band,
                  "Exponential preemptions with the MTTI of an interruption band of "
                  "catalog/spot_bands.csv (under-5, 5-10, 10-15, 15-20, over-20 %/month); "
                  "default when neither --trace nor --mtti: the catalog's default band (over-20)")
      ->type_name("NAME")
      ->excludes(trace)
      ->excludes(mtti);
  cmd->add_option("--outage-mean", f.outage,
                  "Exponential model: mean time spot stays unavailable after a preemption "
                  "(default 0s: capacity is back at once)")
      ->type_name("DURATION");
  cmd->add_option("--policy", f.policy, "on-demand, greedy, uniform-progress or all (default all)")
      ->type_name("NAME");
  cmd->add_option("--checkpoint-interval", f.interval,
                  "Compute between checkpoints on spot: auto (Daly's optimum for the mean time "
                  "to interruption; none when a checkpoint fits in the notice) or a duration")
      ->type_name("auto|DURATION");
  f.cost.Add(cmd);
  cmd->add_option("--restart-cost", f.restart,
                  "Time to load the checkpoint after a relaunch, on top of --changeover "
                  "(default 0s)")
      ->type_name("DURATION");
  cmd->add_option("--notice", f.notice,
                  "Preemption notice (default 120s: AWS; GCP and Azure give 30s)")
      ->type_name("DURATION");
  cmd->add_option("--poll-interval", f.poll,
                  "How often the job polls for the notice (default 5s, as AWS advises)")
      ->type_name("DURATION");
  cmd->add_option("--notice-margin", f.margin,
                  "Part of the notice kept free as a safety margin (default 10s)")
      ->type_name("DURATION");
  cmd->add_option("--billing-granularity", f.granularity,
                  "Each instance's run is rounded up to this (default 1s: AWS, GCP)")
      ->type_name("DURATION");
  cmd->add_option("--billing-minimum", f.minimum,
                  "Minimum billed per instance start (default 60s: AWS, GCP)")
      ->type_name("DURATION");
  cmd->add_option("--trials", f.trials, "Monte Carlo trials per policy (default 10000)")
      ->type_name("N");
  cmd->add_option("--seed", f.seed, "Random seed; the same seed gives the same numbers (default 1)")
      ->type_name("S");
  cmd->add_option("--threads", f.threads,
                  "Worker threads (default 0 = all cores; results do not depend on it)")
      ->type_name("N");
  cmd->add_flag("--json", f.json,
                "Print {\"policies\": [{\"policy\", \"mean_cost_usd\", \"p50_cost_usd\", "
                "\"p90_cost_usd\", \"mean_hours\", \"p90_hours\", \"deadline_met_fraction\", "
                "\"spot_hours\", \"on_demand_hours\", \"preemptions_mean\", ...}], ...}");
}

}  // namespace

void RegisterSpot(CLI::App* cmd, CliContext& ctx) {
  cmd->footer(
      "Simulates the job many times under random preemptions for the on-demand, greedy and "
      "Uniform Progress (Wu et al., NSDI'24) policies, with checkpoints, changeover delays, the "
      "preemption notice and billing rounding. Greedy and Uniform Progress switch to on-demand "
      "for good when the time left R < C + 2d, so they meet the deadline whenever it can be "
      "met. `fulcrum spot interval` gives the optimum checkpoint interval.\n\nExamples:\n  "
      "fulcrum spot --work 48h --deadline 52h --on-demand-price 3.06 --spot-price 0.9731 "
      "--changeover 12m --mtti 6h");
  auto f = std::make_shared<SpotFlags>();
  AddSpotOptions(cmd, *f);
  RegisterInterval(cmd, ctx);
  cmd->require_subcommand(0, 1);
  cmd->callback([&ctx, f, cmd] {
    if (!cmd->get_subcommands().empty()) return;  // `spot interval` ran its own callback
    Status status = RunSpot(ctx, *f);
    if (!status.ok()) ReportError(ctx, status);
  });
}

}  // namespace fulcrum::cli
