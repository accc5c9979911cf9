#include "serve/spec.h"

#include <cmath>
#include <filesystem>

#include "core/input_error.h"
#include "core/text_file.h"
#include "core/yaml.h"
#include "plan/spec.h"
#include "serve/serve.h"

namespace fulcrum::serve {
namespace {

constexpr double kPositive = YamlNode::kAboveZero;
constexpr int64_t kMaxTokens = int64_t{1} << 24;

// A name checked with a parser of serve.h (precision, batching, engine), its error placed at the
// node.
template <typename Parse>
Result<std::string> PrecisionField(const YamlNode& v, Parse parse) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, v.Text());
  const auto parsed = parse(text);
  if (parsed.ok()) return text;
  ErrorDetail d = parsed.status().detail() ? *parsed.status().detail() : ErrorDetail{};
  d.file = v.origin();
  d.line = v.line();
  d.field = v.field();
  return InputError(std::move(d));
}

Result<std::optional<double>> Seconds(const YamlNode& node, const std::string& key) {
  if (auto v = node.Find(key)) {
    FULCRUM_ASSIGN_OR_RETURN(double s,
                             v->Duration("a positive time such as 0.05, 50ms or 2s", kPositive));
    return std::optional<double>(s);
  }
  return std::optional<double>();
}

Status ParseTargets(const YamlNode& node, LatencyTargets& t) {
  std::vector<std::string> keys;
  for (const LatencyTargetField& f : LatencyTargetFields()) keys.emplace_back(f.name);
  FULCRUM_RETURN_IF_ERROR(
      node.CheckKeys(keys, "a mapping of latency targets (ttft_p90: 1s, tpot_p90: 40ms, ...)"));
  for (const LatencyTargetField& f : LatencyTargetFields()) {
    FULCRUM_ASSIGN_OR_RETURN(t.*f.member, Seconds(node, f.name));
  }
  return Status::Ok();
}

// A length: a whole number of tokens, or {mean, p90} (p90 >= mean; a log-normal through both
// gives the squared coefficient of variation exp(sigma^2) - 1, sigma the root of
// sigma z90 - sigma^2 / 2 = ln(p90 / mean), z90 = 1.2816: the log-normal's mean
// exp(mu + sigma^2/2) and quantile exp(mu + z sigma)).
Status ParseLength(const YamlNode& v, std::optional<int64_t>& mean, std::optional<double>* scv) {
  if (!v.IsMap()) {
    FULCRUM_ASSIGN_OR_RETURN(mean, v.Integer(1, kMaxTokens));
    return Status::Ok();
  }
  FULCRUM_RETURN_IF_ERROR(v.CheckKeys({"mean", "p90"}, "a token count or {mean, p90}"));
  FULCRUM_ASSIGN_OR_RETURN(YamlNode m, v.Required("mean"));
  FULCRUM_ASSIGN_OR_RETURN(mean, m.Integer(1, kMaxTokens));
  if (auto p90 = v.Find("p90")) {
    FULCRUM_ASSIGN_OR_RETURN(
        double q, p90->Number("a P90 at least the mean", static_cast<double>(*mean), kMaxTokens));
    if (scv != nullptr) {
      constexpr double kZ90 = 1.2815515655446004;
      const double log_ratio = std::log(q / static_cast<double>(*mean));
      // Smaller root of sigma^2/2 - z sigma + ln r = 0 (exists while ln r <= z^2 / 2).
      const double disc = kZ90 * kZ90 - 2 * log_ratio;
      if (disc < 0) return p90->Error("a P90 below 2.27 x the mean (a log-normal's limit)");
      const double sigma = kZ90 - std::sqrt(disc);
      *scv = std::exp(sigma * sigma) - 1;
    }
  }
  return Status::Ok();
}

Status ParseTraffic(const YamlNode& node, ServeSpec& spec) {
  FULCRUM_RETURN_IF_ERROR(node.CheckKeys(
      {"requests_per_second", "concurrency", "arrival", "input_len", "output_len"},
      "a mapping (requests_per_second, arrival, input_len, output_len, concurrency)"));
  if (auto v = node.Find("arrival")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.arrival, v->Text());
    if (spec.arrival != "poisson" && spec.arrival != "constant") {
      return v->Error("poisson or constant");
    }
  }
  if (auto v = node.Find("input_len")) {
    FULCRUM_RETURN_IF_ERROR(ParseLength(*v, spec.input_len, nullptr));
  }
  if (auto v = node.Find("output_len")) {
    FULCRUM_RETURN_IF_ERROR(ParseLength(*v, spec.output_len, &spec.output_scv));
  }
  if (auto v = node.Find("requests_per_second")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.requests_per_second,
                             v->Number("a positive request rate", kPositive));
  }
  if (auto v = node.Find("concurrency")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.concurrency, v->Integer(1, 1 << 20));
  }
  return Status::Ok();
}

Status ParseModel(const YamlNode& root, const std::string& base_dir, ServeSpec& spec) {
  plan::SpecModel model;
  FULCRUM_RETURN_IF_ERROR(plan::ParseSpecModel(root, base_dir, model));
  spec.model_preset = model.preset;
  spec.hf_config_path = model.hf_config_path;
  spec.model_yaml = model.yaml;
  if (!spec.hf_config_path.empty() && (!spec.model_preset.empty() || !spec.model_yaml.empty())) {
    return root.Required("hf_config")->Error("no hf_config next to model (give one of them)");
  }
  return Status::Ok();
}

}  // namespace

const std::vector<LatencyTargetField>& LatencyTargetFields() {
  using T = LatencyTargets;
  using M = LatencyMetric;
  static const std::vector<LatencyTargetField> kFields = {
      {"ttft_p50", M::kTtft, 0.5, &T::ttft_p50_seconds},
      {"ttft_p90", M::kTtft, 0.9, &T::ttft_p90_seconds},
      {"ttft_p95", M::kTtft, 0.95, &T::ttft_p95_seconds},
      {"ttft_p99", M::kTtft, 0.99, &T::ttft_p99_seconds},
      {"tpot_p50", M::kTpot, 0.5, &T::tpot_p50_seconds},
      {"tpot_p90", M::kTpot, 0.9, &T::tpot_p90_seconds},
      {"tpot_p95", M::kTpot, 0.95, &T::tpot_p95_seconds},
      {"tpot_p99", M::kTpot, 0.99, &T::tpot_p99_seconds},
      {"e2e_p90", M::kE2e, 0.9, &T::e2e_p90_seconds},
      {"e2e_p99", M::kE2e, 0.99, &T::e2e_p99_seconds},
  };
  return kFields;
}

Result<ServeSpec> ParseServeYaml(std::string_view text, const std::string& origin,
                                 const std::string& base_dir) {
  FULCRUM_ASSIGN_OR_RETURN(YamlNode root, LoadYaml(text, origin));
  ServeSpec spec;
  spec.origin = origin;
  FULCRUM_RETURN_IF_ERROR(root.CheckKeys(
      {"model", "hf_config", "precision", "kv_precision", "input_len", "output_len", "traffic",
       "targets", "tp", "gpus", "providers", "top", "name", "description", "batching",
       "prefill_chunk", "engine", "hf_fused_modules", "rank_unconfirmed"},
      "a mapping of serve-plan fields (model, precision, traffic, targets, ...)"));
  FULCRUM_RETURN_IF_ERROR(ParseModel(root, base_dir, spec));
  if (auto v = root.Find("precision")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.precision, PrecisionField(*v, ParsePrecision));
  }
  if (auto v = root.Find("kv_precision")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.kv_precision, PrecisionField(*v, ParseKvPrecision));
  }
  if (auto v = root.Find("engine")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.engine, PrecisionField(*v, ParseEngine));
  }
  if (auto v = root.Find("batching")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.batching, PrecisionField(*v, ParseBatching));
  }
  if (auto v = root.Find("prefill_chunk")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.prefill_chunk, v->Integer(1, kMaxTokens));
  }
  if (auto v = root.Find("hf_fused_modules")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.hf_fused_modules, v->Bool());
  }
  if (auto v = root.Find("input_len")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.input_len, v->Integer(1, kMaxTokens));
  }
  if (auto v = root.Find("output_len")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.output_len, v->Integer(1, kMaxTokens));
  }
  if (auto v = root.Find("traffic")) FULCRUM_RETURN_IF_ERROR(ParseTraffic(*v, spec));
  if (auto v = root.Find("targets")) FULCRUM_RETURN_IF_ERROR(ParseTargets(*v, spec.targets));
  if (auto v = root.Find("tp")) {
    FULCRUM_ASSIGN_OR_RETURN(std::vector<YamlNode> items, v->Items("a list of tensor-parallel "
                                                                   "degrees such as [1, 2, 4]"));
    for (const YamlNode& item : items) {
      FULCRUM_ASSIGN_OR_RETURN(int64_t tp, item.Integer(1, 64));
      spec.tp.push_back(tp);
    }
  }
  if (auto v = root.Find("gpus")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.gpus, v->StringList(true));
  }
  if (auto v = root.Find("providers")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.providers, v->StringList(true));
  }
  if (auto v = root.Find("top")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.top, v->Integer(1, 100000));
  }
  if (auto v = root.Find("rank_unconfirmed")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.unconfirmed_last, plan::RankUnconfirmedField(*v));
  }
  return spec;
}

Result<ServeSpec> LoadServeFile(const std::string& path) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "a serve spec (YAML)"));
  return ParseServeYaml(text, path, std::filesystem::path(path).parent_path().string());
}

}  // namespace fulcrum::serve
