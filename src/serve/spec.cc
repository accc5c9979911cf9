#include "serve/spec.h"

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

// A precision name checked with the parser of serve.h, its error placed at the node.
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
  FULCRUM_RETURN_IF_ERROR(node.CheckKeys({"ttft_p50", "ttft_p90", "tpot_p50", "tpot_p90"},
                                         "a mapping of latency targets (ttft_p90: 1s, ...)"));
  FULCRUM_ASSIGN_OR_RETURN(t.ttft_p50_seconds, Seconds(node, "ttft_p50"));
  FULCRUM_ASSIGN_OR_RETURN(t.ttft_p90_seconds, Seconds(node, "ttft_p90"));
  FULCRUM_ASSIGN_OR_RETURN(t.tpot_p50_seconds, Seconds(node, "tpot_p50"));
  FULCRUM_ASSIGN_OR_RETURN(t.tpot_p90_seconds, Seconds(node, "tpot_p90"));
  return Status::Ok();
}

Status ParseTraffic(const YamlNode& node, ServeSpec& spec) {
  FULCRUM_RETURN_IF_ERROR(node.CheckKeys({"requests_per_second", "concurrency"},
                                         "a mapping (requests_per_second, concurrency)"));
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

Result<ServeSpec> ParseServeYaml(std::string_view text, const std::string& origin,
                                 const std::string& base_dir) {
  FULCRUM_ASSIGN_OR_RETURN(YamlNode root, LoadYaml(text, origin));
  ServeSpec spec;
  spec.origin = origin;
  FULCRUM_RETURN_IF_ERROR(root.CheckKeys(
      {"model", "hf_config", "precision", "kv_precision", "input_len", "output_len", "traffic",
       "targets", "tp", "gpus", "providers", "top", "name", "description"},
      "a mapping of serve-plan fields (model, precision, traffic, targets, ...)"));
  FULCRUM_RETURN_IF_ERROR(ParseModel(root, base_dir, spec));
  if (auto v = root.Find("precision")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.precision, PrecisionField(*v, ParsePrecision));
  }
  if (auto v = root.Find("kv_precision")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.kv_precision, PrecisionField(*v, ParseKvPrecision));
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
  return spec;
}

Result<ServeSpec> LoadServeFile(const std::string& path) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "a serve spec (YAML)"));
  return ParseServeYaml(text, path, std::filesystem::path(path).parent_path().string());
}

}  // namespace fulcrum::serve
