#include "calibration_data.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "core/csv.h"
#include "core/parse.h"

namespace fulcrum::calibrate {
namespace {

Result<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// One CSV record with access by column name.
class Record {
 public:
  Record(const std::string& file, const CsvDocument& doc, const CsvRecord& record)
      : file_(file), doc_(doc), record_(record) {}

  Result<std::string> Text(const std::string& column) const {
    const auto it = std::find(doc_.header.begin(), doc_.header.end(), column);
    if (it == doc_.header.end()) {
      return Status::InvalidInput(file_ + ": no column '" + column + "' in the header");
    }
    return record_.fields[static_cast<size_t>(it - doc_.header.begin())];
  }
  // Empty = 0 (the CSVs leave counts that do not apply empty).
  Result<int64_t> Int(const std::string& column) const {
    FULCRUM_ASSIGN_OR_RETURN(const std::string text, Text(column));
    if (text.empty()) return int64_t{0};
    Result<int64_t> v = ParseInt(text);
    if (v.ok()) return v;
    return Status::InvalidInput(Where() + ": " + column + ": expected an integer, found '" + text +
                                "'");
  }
  Result<double> Number(const std::string& column) const {
    FULCRUM_ASSIGN_OR_RETURN(const std::string text, Text(column));
    Result<double> v = ParseDouble(text);
    if (v.ok()) return v;
    return Status::InvalidInput(Where() + ": " + column + ": expected a number, found '" + text +
                                "'");
  }
  std::string Where() const { return file_ + ":" + std::to_string(record_.line); }

 private:
  const std::string& file_;
  const CsvDocument& doc_;
  const CsvRecord& record_;
};

template <typename Fn>
Status ForEachRecord(const std::string& root, const std::string& name, Fn fn) {
  const std::string file = "data/calibration/" + name;
  FULCRUM_ASSIGN_OR_RETURN(const std::string text, ReadText(root + "/" + file));
  FULCRUM_ASSIGN_OR_RETURN(const CsvDocument doc, ParseCsv(text, file));
  for (const CsvRecord& record : doc.records) {
    FULCRUM_RETURN_IF_ERROR(fn(Record(file, doc, record)));
  }
  return Status::Ok();
}

// Resolves `request` into row.input and row.node (or row.refused).
void Resolve(const estimate::EstimateRequest& request, const catalog::Catalog& catalog,
             const std::string& catalog_dir, CalibrationRow& row) {
  Result<estimate::EstimateInput> input =
      estimate::ResolveEstimateInput(request, catalog, catalog_dir);
  if (!input.ok()) {
    row.refused = input.status().message();
    return;
  }
  row.input = std::move(*input);
  row.node.gpu = row.input->gpu.name;
  row.node.gpu_count = static_cast<int>(row.input->gpus_per_node);
  row.node.interconnect = row.input->interconnect;
  row.node.network_gbps = row.input->network_gbps;
  // A memory figure logged by the last rank (Megatron) is the last pipeline stage's.
  row.memory = row.last_rank_memory
                   ? estimate::EstimateLastStageMemory(row.input->model, row.input->training)
                   : estimate::Evaluate(*row.input).memory;
  const estimate::MemoryBreakdown& memory = row.memory;
  row.memory_value = row.quantity == Quantity::kMemoryAllocated  ? memory.allocated_bytes
                     : row.quantity == Quantity::kMemoryReserved ? memory.reserved_bytes
                                                                 : memory.peak_bytes_per_gpu;
  if (row.resume) {
    row.resume_memory =
        estimate::EstimateResumeMemory(row.input->model, row.input->training, row.memory);
    const estimate::ResumeMemory& r = row.resume_memory;
    row.memory_value = row.quantity == Quantity::kMemoryAllocated  ? r.allocated_bytes
                       : row.quantity == Quantity::kMemoryReserved ? r.reserved_bytes
                                                                   : r.peak_at_resume_bytes_per_gpu;
  }
}

// The framework settings a run's configuration states (gradient reduction dtype, Transformer
// Engine FP8 weights, the loss kernel); empty: the framework's defaults.
Status ReadFrameworkSettings(const Record& r, estimate::EstimateRequest& q) {
  FULCRUM_ASSIGN_OR_RETURN(q.grad_precision, r.Text("grad_precision"));
  FULCRUM_ASSIGN_OR_RETURN(const int64_t fp8_params, r.Int("fp8_params"));
  q.fp8_params = fp8_params == 1;
  FULCRUM_ASSIGN_OR_RETURN(q.cross_entropy, r.Text("cross_entropy"));
  return Status::Ok();
}

// Those settings, as the layout column of ACCURACY.md's tables shows them.
std::string FrameworkSettingsLabel(const estimate::EstimateRequest& q) {
  return (q.grad_precision.empty() ? "" : " grad " + q.grad_precision) +
         (q.fp8_params ? " fp8-params" : "") +
         (q.cross_entropy.empty() ? "" : " " + q.cross_entropy + "-ce");
}

// The row's identity, quantity and measured value, and the estimator request its columns give.
Result<estimate::EstimateRequest> ReadMeasuredRow(const Record& r, CalibrationRow& row) {
  FULCRUM_ASSIGN_OR_RETURN(row.id, r.Text("id"));
  FULCRUM_ASSIGN_OR_RETURN(row.family, r.Text("family"));
  FULCRUM_ASSIGN_OR_RETURN(row.source, r.Text("source"));
  FULCRUM_ASSIGN_OR_RETURN(const std::string kind, r.Text("kind"));
  FULCRUM_ASSIGN_OR_RETURN(const std::string metric, r.Text("memory_metric"));
  row.last_rank_memory = metric.find("last_rank") != std::string::npos;
  row.resume = kind == "memory_peak_resume";
  if (kind == "memory_peak" || row.resume) {
    row.quantity = metric.find("max_allocated") != std::string::npos  ? Quantity::kMemoryAllocated
                   : metric.find("max_reserved") != std::string::npos ? Quantity::kMemoryReserved
                                                                      : Quantity::kMemoryPeak;
  } else if (kind == "throughput") {
    row.quantity = Quantity::kTokensPerSecondPerGpu;
  } else if (kind == "step_time") {
    row.quantity = Quantity::kStepSeconds;
  } else {
    return Status::InvalidInput(r.Where() +
                                ": kind: expected memory_peak, memory_peak_resume, throughput or "
                                "step_time, found '" +
                                kind + "'");
  }
  FULCRUM_ASSIGN_OR_RETURN(row.measured, r.Number("measured_value"));

  estimate::EstimateRequest q;
  FULCRUM_ASSIGN_OR_RETURN(q.layers, r.Int("n_layers"));
  FULCRUM_ASSIGN_OR_RETURN(q.hidden, r.Int("d_model"));
  FULCRUM_ASSIGN_OR_RETURN(q.heads, r.Int("n_heads"));
  FULCRUM_ASSIGN_OR_RETURN(q.kv_heads, r.Int("n_kv_heads"));
  FULCRUM_ASSIGN_OR_RETURN(q.ffn_hidden, r.Int("ffn_hidden"));
  FULCRUM_ASSIGN_OR_RETURN(q.vocab, r.Int("vocab"));
  FULCRUM_ASSIGN_OR_RETURN(q.mlp, r.Text("mlp"));
  FULCRUM_ASSIGN_OR_RETURN(const int64_t tied, r.Int("tied_embeddings"));
  q.tied_embeddings = tied == 1;
  FULCRUM_ASSIGN_OR_RETURN(q.seq_len, r.Int("seq_len"));
  FULCRUM_ASSIGN_OR_RETURN(q.gpu, r.Text("gpu"));
  FULCRUM_ASSIGN_OR_RETURN(q.gpus, r.Int("n_gpus"));
  FULCRUM_ASSIGN_OR_RETURN(q.precision, r.Text("precision"));
  FULCRUM_ASSIGN_OR_RETURN(q.tp, r.Int("tp"));
  FULCRUM_ASSIGN_OR_RETURN(q.pp, r.Int("pp"));
  FULCRUM_ASSIGN_OR_RETURN(q.vpp, r.Int("vpp"));
  FULCRUM_ASSIGN_OR_RETURN(q.dp, r.Int("dp"));
  FULCRUM_ASSIGN_OR_RETURN(q.cp, r.Int("cp"));
  q.cp = std::max<int64_t>(1, q.cp);
  FULCRUM_ASSIGN_OR_RETURN(q.zero, r.Int("zero"));
  FULCRUM_ASSIGN_OR_RETURN(q.micro_batch, r.Int("micro_batch"));
  FULCRUM_ASSIGN_OR_RETURN(q.global_batch, r.Int("global_batch"));
  FULCRUM_ASSIGN_OR_RETURN(q.recompute, r.Text("recompute"));
  FULCRUM_ASSIGN_OR_RETURN(const int64_t sp, r.Int("sequence_parallel"));
  q.sequence_parallel = sp == 1;
  FULCRUM_ASSIGN_OR_RETURN(q.flash_attention, r.Text("flash_attention"));
  FULCRUM_ASSIGN_OR_RETURN(q.framework, r.Text("framework"));
  FULCRUM_ASSIGN_OR_RETURN(q.gpus_per_node, r.Int("gpus_per_node"));
  FULCRUM_ASSIGN_OR_RETURN(q.network_gbps, r.Number("network_gbps_per_node"));

  row.model = std::to_string(q.layers) + "/" + std::to_string(q.hidden) + "/" +
              std::to_string(q.heads) + "/" + std::to_string(q.kv_heads);
  row.gpu = q.gpu + " x " + std::to_string(q.gpus);
  row.layout = std::to_string(q.tp) + "/" + std::to_string(q.pp) + "/" + std::to_string(q.vpp) +
               "/" + std::to_string(q.dp) + (q.cp > 1 ? " cp" + std::to_string(q.cp) : "") + " z" +
               std::to_string(q.zero) + " " + q.framework;
  row.batch = std::to_string(q.micro_batch) + " x " + std::to_string(q.seq_len) + " " +
              q.recompute + (q.flash_attention == "on" ? " flash" : "");
  row.precision = q.precision;
  return q;
}

Status AddMeasuredRow(const Record& r, const catalog::Catalog& catalog,
                      const std::string& catalog_dir, std::vector<CalibrationRow>& rows) {
  CalibrationRow row;
  row.file = "measured.csv";
  FULCRUM_ASSIGN_OR_RETURN(estimate::EstimateRequest q, ReadMeasuredRow(r, row));
  // Uneven pipeline end stages (empty = even): layers on the first and the last stage.
  FULCRUM_ASSIGN_OR_RETURN(q.first_stage_layers, r.Int("first_stage_layers"));
  FULCRUM_ASSIGN_OR_RETURN(q.last_stage_layers, r.Int("last_stage_layers"));
  if (q.first_stage_layers > 0 || q.last_stage_layers > 0) {
    row.layout +=
        " ends " + std::to_string(q.first_stage_layers) + "+" + std::to_string(q.last_stage_layers);
  }
  FULCRUM_RETURN_IF_ERROR(ReadFrameworkSettings(r, q));
  row.layout += FrameworkSettingsLabel(q);
  Resolve(q, catalog, catalog_dir, row);
  rows.push_back(std::move(row));
  return Status::Ok();
}

// resume.csv: measured.csv's columns plus the expert layout, the checkpoint format the run
// resumed from and the same configuration's fresh-run peak.
Status AddResumeRow(const Record& r, const catalog::Catalog& catalog,
                    const std::string& catalog_dir, std::vector<CalibrationRow>& rows) {
  CalibrationRow row;
  row.file = "resume.csv";
  FULCRUM_ASSIGN_OR_RETURN(estimate::EstimateRequest q, ReadMeasuredRow(r, row));
  if (!row.resume) {
    return Status::InvalidInput(r.Where() + ": kind: expected memory_peak_resume");
  }
  FULCRUM_ASSIGN_OR_RETURN(q.ep, r.Int("ep"));
  q.ep = std::max<int64_t>(1, q.ep);
  FULCRUM_ASSIGN_OR_RETURN(q.experts, r.Int("experts"));
  FULCRUM_ASSIGN_OR_RETURN(q.experts_per_token, r.Int("experts_per_token"));
  FULCRUM_ASSIGN_OR_RETURN(q.checkpoint_format, r.Text("checkpoint_format"));
  FULCRUM_ASSIGN_OR_RETURN(row.fresh_measured, r.Number("fresh_value"));
  if (q.experts > 0) row.model += " " + std::to_string(q.experts) + "e";
  row.layout += q.ep > 1 ? " ep" + std::to_string(q.ep) : "";
  row.layout += " " + q.checkpoint_format;
  Resolve(q, catalog, catalog_dir, row);
  rows.push_back(std::move(row));
  return Status::Ok();
}

// DeepLearningExamples model names -> catalog/models presets.
const std::map<std::string, std::string>& DlePresets() {
  static const std::map<std::string, std::string> kPresets = {
      {"resnet50", "resnet-50"},
      {"resnext101-32x4d", "resnext101-32x4d"},
      {"se-resnext101-32x4d", "se-resnext101-32x4d"},
      {"efficientnet-b0", "efficientnet-b0"},
      {"efficientnet-b4", "efficientnet-b4"},
      {"efficientnetv2-s", "efficientnetv2-s"},
      {"bert-large-uncased", "bert-large"}};
  return kPresets;
}

Status AddDleRow(const Record& r, const catalog::Catalog& catalog, const std::string& catalog_dir,
                 std::vector<CalibrationRow>& rows) {
  CalibrationRow row;
  row.file = "dle-throughput.csv";
  row.family = "dle";
  row.quantity = Quantity::kSamplesPerSecondTotal;
  FULCRUM_ASSIGN_OR_RETURN(row.id, r.Text("id"));
  FULCRUM_ASSIGN_OR_RETURN(row.source, r.Text("source"));
  FULCRUM_ASSIGN_OR_RETURN(row.measured, r.Number("value"));
  FULCRUM_ASSIGN_OR_RETURN(const std::string model, r.Text("model"));
  FULCRUM_ASSIGN_OR_RETURN(const std::string framework, r.Text("framework"));
  FULCRUM_ASSIGN_OR_RETURN(const std::string precision, r.Text("precision"));
  FULCRUM_ASSIGN_OR_RETURN(const int64_t accumulation, r.Int("grad_accumulation"));
  FULCRUM_ASSIGN_OR_RETURN(const std::string seq_text, r.Text("seq_len"));
  FULCRUM_ASSIGN_OR_RETURN(const int64_t image_size, r.Int("image_size"));
  // A row the estimator cannot be given faithfully is scored but not fitted; the CSV says why.
  FULCRUM_ASSIGN_OR_RETURN(row.not_fitted, r.Text("not_fitted"));
  const auto preset = DlePresets().find(model);
  if (preset == DlePresets().end()) {
    return Status::InvalidInput(r.Where() + ": model: no preset for '" + model + "'");
  }
  estimate::EstimateRequest q;
  q.model = preset->second;
  FULCRUM_ASSIGN_OR_RETURN(q.gpu, r.Text("gpu"));
  FULCRUM_ASSIGN_OR_RETURN(q.gpus, r.Int("n_gpus"));
  q.gpus_per_node = std::min<int64_t>(8, q.gpus);
  q.interconnect = "nvlink";
  // The tables name DGX systems but not their fabric: DGX A100 has 8 x 200 Gbit/s HDR InfiniBand
  // for compute, DGX-1 4 x 100 Gbit/s EDR (NVIDIA DGX A100 and DGX-1 datasheets).
  q.network_gbps = q.gpu.rfind("A100", 0) == 0 ? 1600 : 400;
  // amp_fp16 is PyTorch/TF automatic mixed precision (fp16 autocast, fp32 master weights).
  q.precision = precision == "amp_fp16" ? "fp16" : precision;
  FULCRUM_ASSIGN_OR_RETURN(q.micro_batch, r.Int("batch_size_per_gpu"));
  q.global_batch = q.micro_batch * q.gpus * std::max<int64_t>(1, accumulation);
  q.framework = "hf";
  // DLE's BERT (2019-2021 containers) predates fused flash attention.
  q.flash_attention = "off";
  if (!seq_text.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(q.seq_len, r.Int("seq_len"));
  }
  // What the recipe runs, from its source (column shape_source): the mean padded tokens per
  // sequence under LDDL sequence binning, the tokens the masked-LM head gathers, a span head's
  // width (empty: seq_len, every token, the vocabulary), and the optimizer's kernels.
  FULCRUM_ASSIGN_OR_RETURN(q.mean_seq_len, r.Int("mean_seq_len"));
  FULCRUM_ASSIGN_OR_RETURN(q.head_tokens, r.Int("head_tokens"));
  FULCRUM_ASSIGN_OR_RETURN(q.head_width, r.Int("head_width"));
  // How the recipe's optimizer runs (empty: fused; TF1 BERT: its graph of per-tensor ops).
  FULCRUM_ASSIGN_OR_RETURN(q.optimizer_kernels, r.Text("optimizer_kernels"));
  row.model = model + " (" + framework + ")";
  FULCRUM_ASSIGN_OR_RETURN(const std::string gpu, r.Text("gpu"));
  row.gpu = gpu + " x " + std::to_string(q.gpus);
  row.layout = "dp " + std::to_string(q.gpus);
  row.batch = std::to_string(q.micro_batch) + (seq_text.empty() ? "" : " x " + seq_text) +
              (q.mean_seq_len > 0 ? " (mean " + std::to_string(q.mean_seq_len) + ")" : "") +
              (accumulation > 1 ? " ga" + std::to_string(accumulation) : "");
  row.precision = precision;
  if (image_size > 0) row.batch += " @" + std::to_string(image_size) + "px";
  if (!row.not_fitted.empty()) row.batch += " (not fitted)";
  Resolve(q, catalog, catalog_dir, row);
  // The presets are at their reference resolution; the row's run may train at another
  // (EfficientNetV2-S's last progressive-resize stage: 300 of 384).
  if (row.input) row.input->model = workload::AtImageSize(row.input->model, image_size);
  rows.push_back(std::move(row));
  return Status::Ok();
}

}  // namespace

Result<std::vector<CalibrationRow>> LoadCalibrationRows(const std::string& root) {
  const std::string catalog_dir = root + "/catalog";
  catalog::LoadOptions load;
  load.include_user_offers = false;
  FULCRUM_ASSIGN_OR_RETURN(const catalog::Catalog catalog,
                           catalog::Catalog::Load(catalog_dir, load));
  std::vector<CalibrationRow> rows;
  FULCRUM_RETURN_IF_ERROR(ForEachRecord(root, "measured.csv", [&](const Record& r) {
    return AddMeasuredRow(r, catalog, catalog_dir, rows);
  }));
  FULCRUM_RETURN_IF_ERROR(ForEachRecord(root, "dle-throughput.csv", [&](const Record& r) {
    return AddDleRow(r, catalog, catalog_dir, rows);
  }));
  return rows;
}

Result<std::vector<CalibrationRow>> LoadResumeRows(const std::string& root) {
  const std::string catalog_dir = root + "/catalog";
  catalog::LoadOptions load;
  load.include_user_offers = false;
  FULCRUM_ASSIGN_OR_RETURN(const catalog::Catalog catalog,
                           catalog::Catalog::Load(catalog_dir, load));
  std::vector<CalibrationRow> rows;
  FULCRUM_RETURN_IF_ERROR(ForEachRecord(root, "resume.csv", [&](const Record& r) {
    return AddResumeRow(r, catalog, catalog_dir, rows);
  }));
  return rows;
}

namespace {

// catalog/goodput.csv's rows and the losses fitted on all of them, read once for every row of
// published_runs.csv.
struct GoodputTable {
  std::vector<plan::GoodputRun> runs;
  plan::CostAssumptions losses;
};

// Columns wall_clock_tokens and goodput_run: the run's WallClockRun, nullopt for a steady-state
// figure (wall_clock_tokens empty).
Result<std::optional<WallClockRun>> WallClockOf(const Record& r, const GoodputTable& goodput) {
  FULCRUM_ASSIGN_OR_RETURN(const std::string tokens, r.Text("wall_clock_tokens"));
  FULCRUM_ASSIGN_OR_RETURN(const std::string own, r.Text("goodput_run"));
  if (tokens.empty()) {
    if (own.empty()) return std::optional<WallClockRun>();
    return Status::InvalidInput(r.Where() + ": goodput_run: '" + own +
                                "' on a steady-state row (wall_clock_tokens is empty)");
  }
  FULCRUM_ASSIGN_OR_RETURN(const double count, r.Number("wall_clock_tokens"));
  if (!(count > 0)) {
    return Status::InvalidInput(r.Where() + ": wall_clock_tokens: expected a token count > 0, " +
                                "found '" + tokens + "'");
  }
  WallClockRun w;
  w.tokens = count;
  w.goodput_run = own;
  std::vector<plan::GoodputRun> others;
  std::string names;
  for (const plan::GoodputRun& g : goodput.runs) {
    if (g.run != own) others.push_back(g);
    names += (names.empty() ? "" : ", ") + g.run;
  }
  if (!own.empty() && others.size() == goodput.runs.size()) {
    return Status::InvalidInput(r.Where() + ": goodput_run: expected a run of " +
                                "catalog/goodput.csv (" + names + "), found '" + own + "'");
  }
  w.losses = goodput.losses;
  if (own.empty()) {
    w.left_out = goodput.losses;
  } else {
    plan::FitGoodput(others, w.left_out);
  }
  return std::optional<WallClockRun>(std::move(w));
}

Status AddPublishedRun(const Record& r, const catalog::Catalog& catalog,
                       const std::string& catalog_dir, const GoodputTable& goodput,
                       std::vector<PublishedRun>& runs) {
  PublishedRun run;
  FULCRUM_ASSIGN_OR_RETURN(run.id, r.Text("id"));
  FULCRUM_ASSIGN_OR_RETURN(run.kind, r.Text("kind"));
  if (run.kind != "tuned_benchmark" && run.kind != "production_run") {
    return Status::InvalidInput(
        r.Where() + ": kind: expected tuned_benchmark or production_run, found '" + run.kind + "'");
  }
  FULCRUM_ASSIGN_OR_RETURN(run.source, r.Text("source"));
  FULCRUM_ASSIGN_OR_RETURN(run.notes, r.Text("notes"));
  FULCRUM_ASSIGN_OR_RETURN(const std::string metric, r.Text("metric"));
  if (metric == "tokens_per_s_per_gpu") {
    run.metric = PublishedMetric::kTokensPerSecondPerGpu;
  } else if (metric == "mfu") {
    run.metric = PublishedMetric::kMfu;
  } else if (metric == "hfu") {
    run.metric = PublishedMetric::kHfu;
  } else {
    return Status::InvalidInput(
        r.Where() + ": metric: expected tokens_per_s_per_gpu, mfu or hfu, found '" + metric + "'");
  }
  FULCRUM_ASSIGN_OR_RETURN(run.published, r.Number("value"));
  FULCRUM_ASSIGN_OR_RETURN(run.wall_clock, WallClockOf(r, goodput));
  estimate::EstimateRequest q;
  FULCRUM_ASSIGN_OR_RETURN(q.model, r.Text("model"));
  for (auto [column, field] : {std::pair{"n_layers", &q.layers},
                               {"d_model", &q.hidden},
                               {"n_heads", &q.heads},
                               {"n_kv_heads", &q.kv_heads},
                               {"ffn_hidden", &q.ffn_hidden},
                               {"vocab", &q.vocab},
                               {"n_gpus", &q.gpus},
                               {"tp", &q.tp},
                               {"pp", &q.pp},
                               {"vpp", &q.vpp},
                               {"cp", &q.cp},
                               {"dp", &q.dp},
                               {"ep", &q.ep},
                               {"zero", &q.zero},
                               {"first_stage_layers", &q.first_stage_layers},
                               {"last_stage_layers", &q.last_stage_layers},
                               {"micro_batch", &q.micro_batch},
                               {"global_batch", &q.global_batch},
                               {"seq_len", &q.seq_len},
                               {"gpus_per_node", &q.gpus_per_node},
                               {"microbatch_group_size", &q.microbatch_group_size}}) {
    FULCRUM_ASSIGN_OR_RETURN(*field, r.Int(column));
  }
  q.cp = std::max<int64_t>(1, q.cp);
  q.vpp = std::max<int64_t>(1, q.vpp);
  q.ep = std::max<int64_t>(1, q.ep);  // empty: no expert parallelism
  FULCRUM_ASSIGN_OR_RETURN(q.mlp, r.Text("mlp"));
  FULCRUM_ASSIGN_OR_RETURN(q.gpu, r.Text("gpu"));
  FULCRUM_ASSIGN_OR_RETURN(q.precision, r.Text("precision"));
  FULCRUM_ASSIGN_OR_RETURN(q.framework, r.Text("framework"));
  FULCRUM_ASSIGN_OR_RETURN(q.recompute, r.Text("recompute"));
  FULCRUM_ASSIGN_OR_RETURN(const int64_t sp, r.Int("sequence_parallel"));
  q.sequence_parallel = sp == 1;
  FULCRUM_ASSIGN_OR_RETURN(q.network_gbps, r.Number("network_gbps_per_node"));
  FULCRUM_ASSIGN_OR_RETURN(q.flash_attention, r.Text("flash_attention"));
  FULCRUM_ASSIGN_OR_RETURN(const int64_t tied, r.Int("tied_embeddings"));
  q.tied_embeddings = tied == 1;
  FULCRUM_RETURN_IF_ERROR(ReadFrameworkSettings(r, q));
  // Megatron-LM's names for what the run's report says it recomputes (--recompute-modules under
  // selective recompute) and the dtypes of its Adam moments (--exp-avg-dtype /
  // --exp-avg-sq-dtype); empty: core_attn, fp32.
  FULCRUM_ASSIGN_OR_RETURN(q.recompute_modules, r.Text("recompute_modules"));
  FULCRUM_ASSIGN_OR_RETURN(q.exp_avg_dtype, r.Text("exp_avg_dtype"));
  FULCRUM_ASSIGN_OR_RETURN(q.exp_avg_sq_dtype, r.Text("exp_avg_sq_dtype"));
  // apex DistributedFusedAdam's param remainders (NeMo 1.x's optimizer; `estimate
  // --store-param-remainders`).
  FULCRUM_ASSIGN_OR_RETURN(const int64_t remainders, r.Int("store_param_remainders"));
  q.store_param_remainders = remainders == 1;
  // The pipeline schedule the run's report names (empty: 1F1B; dualpipe: DeepSeek-V3's).
  FULCRUM_ASSIGN_OR_RETURN(q.pipeline_schedule, r.Text("pipeline_schedule"));
  // The routed experts' tensor parallelism (empty: tp) and Megatron-Core's all-to-all overlap.
  FULCRUM_ASSIGN_OR_RETURN(q.expert_tp, r.Int("expert_tp"));
  FULCRUM_ASSIGN_OR_RETURN(const int64_t a2a_overlap, r.Int("moe_a2a_overlap"));
  q.moe_a2a_overlap = a2a_overlap == 1;
  // DeepSeek-V3's FP8 / E5M6 activation caching (`estimate --fp8-activation-cache`).
  FULCRUM_ASSIGN_OR_RETURN(const int64_t fp8_cache, r.Int("fp8_activation_cache"));
  q.fp8_activation_cache = fp8_cache == 1;
  // The MoE token dispatcher (empty: alltoall) and group-limited routing (empty: none).
  FULCRUM_ASSIGN_OR_RETURN(q.moe_dispatcher, r.Text("moe_token_dispatcher_type"));
  FULCRUM_ASSIGN_OR_RETURN(q.moe_router_groups, r.Int("moe_router_num_groups"));
  FULCRUM_ASSIGN_OR_RETURN(q.moe_router_group_topk, r.Int("moe_router_group_topk"));
  run.model = q.model.empty() ? std::to_string(q.layers) + "/" + std::to_string(q.hidden) + "/" +
                                    std::to_string(q.heads) + "/" + std::to_string(q.kv_heads)
                              : q.model;
  run.gpu = q.gpu + " x " + std::to_string(q.gpus);
  run.layout =
      "tp" + std::to_string(q.tp) + " pp" + std::to_string(q.pp) +
      (q.vpp > 1 ? " vpp" + std::to_string(q.vpp) : "") +
      (q.cp > 1 ? " cp" + std::to_string(q.cp) : "") + " dp" + std::to_string(q.dp) +
      (q.ep > 1 ? " ep" + std::to_string(q.ep) : "") + " z" + std::to_string(q.zero) + " " +
      q.framework + FrameworkSettingsLabel(q) +
      (q.microbatch_group_size > 0 ? " group " + std::to_string(q.microbatch_group_size) : "") +
      (q.pipeline_schedule.empty() ? "" : " " + q.pipeline_schedule) +
      (q.expert_tp > 0 && q.expert_tp != q.tp ? " etp" + std::to_string(q.expert_tp) : "") +
      (q.moe_a2a_overlap ? " a2a-overlap" : "") + (q.fp8_activation_cache ? " fp8-cache" : "") +
      (q.moe_dispatcher.empty() ? "" : " " + q.moe_dispatcher + " dispatch") +
      (q.moe_router_groups > 0 ? " groups " + std::to_string(q.moe_router_group_topk) + "/" +
                                     std::to_string(q.moe_router_groups)
                               : "") +
      (q.exp_avg_dtype.empty() ? "" : " moments " + q.exp_avg_dtype + "/" + q.exp_avg_sq_dtype) +
      (q.store_param_remainders ? " remainders" : "");
  run.batch = std::to_string(q.micro_batch) + "/" + std::to_string(q.global_batch) + " x " +
              std::to_string(q.seq_len) + " " + q.recompute +
              (q.recompute_modules.empty() ? "" : " (" + q.recompute_modules + ")");
  run.precision = q.precision;
  Result<estimate::EstimateInput> input = estimate::ResolveEstimateInput(q, catalog, catalog_dir);
  if (input.ok()) {
    run.input = std::move(*input);
    run.node.gpu = run.input->gpu.name;
    run.node.gpu_count = static_cast<int>(run.input->gpus_per_node);
    run.node.interconnect = run.input->interconnect;
    run.node.network_gbps = run.input->network_gbps;
  } else {
    run.refused = input.status().message();
  }
  runs.push_back(std::move(run));
  return Status::Ok();
}

}  // namespace

Result<std::vector<PublishedRun>> LoadPublishedRuns(const std::string& root) {
  const std::string catalog_dir = root + "/catalog";
  catalog::LoadOptions load;
  load.include_user_offers = false;
  FULCRUM_ASSIGN_OR_RETURN(const catalog::Catalog catalog,
                           catalog::Catalog::Load(catalog_dir, load));
  GoodputTable goodput;
  FULCRUM_ASSIGN_OR_RETURN(goodput.runs, plan::LoadGoodputRuns(catalog_dir));
  plan::FitGoodput(goodput.runs, goodput.losses);
  std::vector<PublishedRun> runs;
  FULCRUM_RETURN_IF_ERROR(ForEachRecord(root, "published_runs.csv", [&](const Record& r) {
    return AddPublishedRun(r, catalog, catalog_dir, goodput, runs);
  }));
  return runs;
}

std::optional<estimate::StepTime> PredictStepTime(const CalibrationRow& row,
                                                  const estimate::TimeCalibration& calibration) {
  if (!row.input || row.IsMemory()) return std::nullopt;
  const estimate::EstimateInput& in = *row.input;
  const std::optional<estimate::Hardware> hw =
      estimate::HardwareFor(in.gpu, row.node, in.training.precision, calibration);
  if (!hw) return std::nullopt;
  return estimate::EstimateStepTime(in.model, in.training, *hw, calibration);
}

std::optional<double> Predict(const CalibrationRow& row,
                              const estimate::TimeCalibration& calibration) {
  if (!row.input) return std::nullopt;
  if (row.IsMemory()) return row.memory_value;
  const estimate::EstimateInput& in = *row.input;
  const std::optional<estimate::StepTime> time = PredictStepTime(row, calibration);
  if (!time) return std::nullopt;
  const estimate::StepTime& st = *time;
  switch (row.quantity) {
    case Quantity::kTokensPerSecondPerGpu:
      return st.tokens_per_second_per_gpu;
    case Quantity::kStepSeconds:
      return st.step_seconds;
    case Quantity::kSamplesPerSecondTotal: {
      // Transformers count tokens (of the run's padded length: RunSeqLen), generic models
      // samples (estimate/compute.h).
      const bool generic = in.model.kind == workload::ModelKind::kGeneric;
      const double per_gpu = generic ? st.tokens_per_second_per_gpu
                                     : st.tokens_per_second_per_gpu /
                                           static_cast<double>(workload::RunSeqLen(in.training));
      return per_gpu * static_cast<double>(in.gpus);
    }
    default:
      return std::nullopt;
  }
}

std::string Format(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}
std::string Percent(double fraction) { return Format("%.1f %%", 100 * fraction); }
std::string SignedPercent(double fraction) { return Format("%+.1f %%", 100 * fraction); }

}  // namespace fulcrum::calibrate
