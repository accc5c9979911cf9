// `fulcrum catalog import|validate`: bring outside price lists into the catalog's format and
// check a catalog directory.
#include <algorithm>
#include <ctime>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "catalog/catalog_json.h"
#include "catalog/price_import.h"
#include "catalog/skypilot_import.h"
#include "cli/command.h"
#include "core/parse.h"
#include "core/paths.h"
#include "core/text_file.h"
#include "nodecheck/compat_table.h"
#include "nodecheck/env_setup.h"
#include "plan/cost.h"
#include "plan/export.h"
#include "spot/trace.h"
#include "workload/model_io.h"

namespace fulcrum::cli {
namespace {

struct ImportFlags {
  std::string format;
  std::string provider;
  std::string input;
  std::string output;
  std::string source;
  std::string instance_type;
  std::string region;
  std::string currency;
  double usd_per_cny = -1;  // < 0 = not given
  bool json = false;
};

void ReportImport(CliContext& ctx, const ImportFlags& flags, const catalog::ImportResult& r) {
  if (flags.json) {
    nlohmann::json offers = nlohmann::json::array();
    for (const auto& offer : r.offers) offers.push_back(catalog::OfferToJson(offer));
    nlohmann::json skipped = nlohmann::json::array();
    for (const auto& [reason, rows] : r.skipped)
      skipped.push_back({{"reason", reason}, {"rows", rows}});
    PrintJson(ctx, {{"offers", offers}, {"rows_read", r.rows_read}, {"skipped", skipped}});
    return;
  }
  ctx.err << "fulcrum: imported " << r.offers.size() << " offers from " << r.rows_read
          << " rows of " << flags.input << (flags.output.empty() ? "" : " into " + flags.output)
          << "\n";
  for (const auto& [reason, rows] : r.skipped) {
    ctx.err << "  skipped " << rows << " row" << (rows == 1 ? "" : "s") << ": " << reason << "\n";
  }
}

// Today's date (UTC), YYYY-MM-DD: the date of an imported response that carries none.
std::string TodayUtc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

void RunImport(CliContext& ctx, const ImportFlags& flags) {
  auto format = catalog::ParseImportFormat(flags.format);
  if (!format.ok()) return ReportError(ctx, format.status());
  if (*format == catalog::ImportFormat::kSkypilot && Trim(flags.provider).empty()) {
    return ReportError(ctx,
                       Status::InvalidInput("--provider: expected the provider id written "
                                            "into every offer (--format skypilot), found none"));
  }
  // With the user's offers.d: a saved price may be for an instance type the user added there
  // (the shipped catalog has no H800 type of any Chinese cloud).
  auto loaded = catalog::Catalog::Load(DefaultCatalogDir(ctx.catalog_dir), {true, ""});
  if (!loaded.ok()) return ReportError(ctx, loaded.status());
  auto text = ReadTextFile(flags.input, *format == catalog::ImportFormat::kSkypilot
                                            ? "a SkyPilot catalog CSV"
                                            : "a saved price response (JSON)");
  if (!text.ok()) return ReportError(ctx, text.status());
  catalog::ImportOptions options;
  options.provider = ToLower(Trim(flags.provider));
  options.source = flags.source;
  options.instance_type = flags.instance_type;
  options.region = flags.region;
  options.currency = flags.currency;
  if (flags.usd_per_cny >= 0) options.usd_per_cny = flags.usd_per_cny;
  options.date = TodayUtc();
  auto result = catalog::ImportPriceList(*format, *text, flags.input, *loaded, options);
  if (!result.ok()) return ReportError(ctx, result.status());
  std::string csv = catalog::OffersToCsv(result->offers);
  if (!flags.output.empty()) {
    // The documented target is the user offers dir (~/.config/fulcrum/offers.d/), which a fresh
    // home does not have yet.
    const std::filesystem::path parent = std::filesystem::path(flags.output).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    Status written = WriteTextFile(flags.output, csv);
    if (!written.ok()) return ReportError(ctx, written);
  } else if (!flags.json) {
    ctx.out << csv;
  }
  ReportImport(ctx, flags, *result);
}

void AddImportOptions(CLI::App* cmd, ImportFlags& flags) {
  cmd->add_option("--format", flags.format, "Input format: skypilot, alibaba or tencent")
      ->required()
      ->type_name("FORMAT");
  cmd->add_option("--provider", flags.provider,
                  "Provider id written into every offer (aws, gcp, azure, lambda, ...); required "
                  "for skypilot, default alibaba / tencent for those formats")
      ->type_name("NAME");
  cmd->add_option("file", flags.input, "The file to convert (vms.csv, or the saved JSON response)")
      ->required();
  cmd->add_option("--instance-type", flags.instance_type,
                  "alibaba/tencent: the catalog instance type the response prices (see fulcrum "
                  "offers --provider alibaba), e.g. ecs.gn7-c13g1.26xlarge")
      ->type_name("TYPE");
  cmd->add_option("--region", flags.region,
                  "alibaba/tencent: the region the price was asked for, e.g. cn-hangzhou")
      ->type_name("REGION");
  cmd->add_option("--usd-per-cny", flags.usd_per_cny,
                  "alibaba/tencent: convert a CNY price at this rate and write USD (default: keep "
                  "CNY; catalog/currency.csv converts it when loaded)")
      ->check(CLI::PositiveNumber)
      ->type_name("RATE");
  cmd->add_option("--currency", flags.currency,
                  "tencent: the currency billed (the response names none; default CNY)")
      ->type_name("CODE");
  cmd->add_option("-o,--output", flags.output,
                  "Write the offers CSV to FILE (default: standard output)")
      ->type_name("FILE");
  cmd->add_option("--source", flags.source,
                  "Text of the source column (default: \"SkyPilot catalog <file name>\", or "
                  "\"<provider> <API> response <file> saved by the user, imported <date>\")")
      ->type_name("TEXT");
  cmd->add_flag("--json", flags.json,
                "Print {\"offers\": [...], \"rows_read\": N, \"skipped\": [{reason, rows}]} "
                "instead of the CSV (the CSV is still written with -o)");
}

void RegisterImport(CLI::App& parent, CliContext& ctx) {
  auto* cmd = parent.add_subcommand(
      "import",
      "Convert a price list (SkyPilot CSV, saved Alibaba/Tencent price response) into "
      "fulcrum's offers format");
  cmd->footer(
      "--format skypilot reads a vms.csv of skypilot-org/skypilot-catalog (columns InstanceType,\n"
      "AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, GpuInfo, Price, SpotPrice, Region,\n"
      "AvailabilityZone) and writes one offer per instance type and region, with the lowest\n"
      "on-demand and spot price over the region's zones. GCP's separate host-VM and GPU rows are\n"
      "added together. Accelerator names are mapped to catalog GPUs through their aliases; rows\n"
      "without a GPU or with an unknown accelerator are skipped and counted on stderr.\n\n"
      "--format alibaba reads the JSON you saved from Alibaba Cloud's DescribePrice (on-demand,\n"
      "PriceInfo.Price.TradePrice with PriceUnit=Hour) or DescribeSpotPriceHistory (spot: lowest\n"
      "SpotPrice over the zones at the latest Timestamp, with its OriginPrice); --format tencent\n"
      "the JSON of Tencent Cloud's InquiryPriceRunInstances with InstanceChargeType\n"
      "POSTPAID_BY_HOUR (Response.Price.InstancePrice.UnitPriceDiscount, ChargeUnit HOUR). These\n"
      "responses do not name what was priced: --instance-type names the catalog row, shipped or\n"
      "added in your offers.d (GPUs, vCPUs, memory come from it), and --region the region.\n"
      "Prices stay in the currency billed (CNY) and are converted by catalog/currency.csv, or at\n"
      "--usd-per-cny. Nothing is fetched.\n"
      "A file of another format, an unknown instance type or a currency mismatch exits 2.\n\n"
      "Put the output in ~/.config/fulcrum/offers.d/ to use it over the shipped offers.\n\n"
      "Examples:\n"
      "  fulcrum catalog import --format skypilot --provider aws vms.csv \\\n"
      "      -o ~/.config/fulcrum/offers.d/aws.csv\n"
      "  fulcrum catalog import --format alibaba price.json --instance-type \\\n"
      "      ecs.gn7-c13g1.26xlarge --region cn-hangzhou -o ~/.config/fulcrum/offers.d/ali.csv\n"
      "  fulcrum catalog import --format tencent inquiry.json --instance-type \\\n"
      "      GT4.41XLARGE948 --region ap-guangzhou --usd-per-cny 0.1375");
  auto flags = std::make_shared<ImportFlags>();
  AddImportOptions(cmd, *flags);
  cmd->callback([&ctx, flags] { RunImport(ctx, *flags); });
}

// The tables beside gpus/offers/providers/currency that commands read: each one that is in `dir`
// must load (a broken row is its file:line error, exit 2); one that is absent is the reader's
// default. Returns the files checked.
Result<std::vector<std::string>> CheckOtherTables(const std::string& dir) {
  std::vector<std::string> checked;
  const auto check = [&](const std::string& file, const Status& status) -> Status {
    if (!std::filesystem::exists(dir + "/" + file)) return Status::Ok();
    checked.push_back(file);
    return status;
  };
  const Status cost = plan::CheckCostTables(dir);
  for (const char* file : {"storage.csv", "storage_prices.csv", "spot_bands.csv", "goodput.csv"})
    FULCRUM_RETURN_IF_ERROR(check(file, cost));
  FULCRUM_RETURN_IF_ERROR(check(
      "export_skypilot.csv", plan::LoadExportTables(dir, plan::ExportFormat::kSkypilot).status()));
  FULCRUM_RETURN_IF_ERROR(check("export_dstack.csv",
                                plan::LoadExportTables(dir, plan::ExportFormat::kDstack).status()));
  const Status compat = nodecheck::LoadCompatTables(dir).status();
  for (const char* file : {"cuda_driver.csv", "cuda_minor_compat.csv", "torch_wheels.csv",
                           "cuda_gpu_arch.csv", "cuda_forward_compat.csv", "compat_as_of.csv"})
    FULCRUM_RETURN_IF_ERROR(check(file, compat));
  FULCRUM_RETURN_IF_ERROR(
      check("container_images.csv", nodecheck::LoadContainerImages(dir).status()));
  // The model presets (estimate/plan --model) and the public spot traces the planner's spot risk
  // is drawn from: each one loads as the command that reads it loads it.
  for (const std::string& name : workload::ListModelPresets(dir)) {
    const std::string file = "models/" + name + ".yaml";
    FULCRUM_RETURN_IF_ERROR(check(file, workload::LoadModelPreset(dir, name).status()));
  }
  std::error_code ec;
  std::vector<std::string> traces;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(dir + "/spot-traces", ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json")
      traces.push_back(std::filesystem::relative(entry.path(), dir).string());
  }
  std::sort(traces.begin(), traces.end());
  for (const std::string& file : traces)
    FULCRUM_RETURN_IF_ERROR(check(file, spot::LoadTrace(dir + "/" + file).status()));
  return checked;
}

void RegisterValidate(CLI::App& parent, CliContext& ctx) {
  auto* cmd = parent.add_subcommand(
      "validate",
      "Check a catalog directory: gpus, offers, providers, currency and every other table");
  cmd->footer(
      "Loads DIR (default: the catalog in use) with every check that fulcrum applies on start:\n"
      "header, types, ranges, unknown GPU and provider names, duplicate keys; then every other\n"
      "table present (storage, storage prices, spot bands, goodput, export, CUDA/torch\n"
      "compatibility, container images, model presets, spot traces) as the commands that read\n"
      "it do. Prints the counts, or the first error as file:line: field: expected ..., found ...\n"
      "with exit code 2.\n\n"
      "Examples:\n  fulcrum catalog validate ./catalog\n  fulcrum catalog validate "
      "--no-user-offers");
  auto dir = std::make_shared<std::string>();
  auto no_user = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  cmd->add_option("dir", *dir, "Catalog directory (default: --catalog or the shipped catalog)");
  cmd->add_flag("--no-user-offers", *no_user,
                "Do not read $FULCRUM_OFFERS_DIR or ~/.config/fulcrum/offers.d");
  cmd->add_flag("--json", *json,
                "Print {\"catalog\": {dir, gpus, offers, user_offers, providers, currencies, "
                "tables}}");
  cmd->callback([&ctx, dir, no_user, json] {
    std::string path = dir->empty() ? DefaultCatalogDir(ctx.catalog_dir) : *dir;
    auto loaded = catalog::Catalog::Load(path, {!*no_user, ""});
    if (!loaded.ok()) return ReportError(ctx, loaded.status());
    auto tables = CheckOtherTables(path);
    if (!tables.ok()) return ReportError(ctx, tables.status());
    size_t user = 0;
    for (const auto& offer : loaded->offers()) user += offer.origin.rfind(path + "/", 0) != 0;
    if (*json) {
      PrintJson(ctx, {{"catalog",
                       {{"dir", path},
                        {"gpus", loaded->gpus().size()},
                        {"offers", loaded->offers().size()},
                        {"user_offers", user},
                        {"providers", loaded->providers().size()},
                        {"currencies", loaded->currencies().size()},
                        {"tables", *tables}}}});
      return;
    }
    ctx.out << path << ": ok: " << loaded->gpus().size() << " GPUs, " << loaded->offers().size()
            << " offers (" << user << " from offers.d), " << loaded->providers().size()
            << " providers, currency rates: " << loaded->currencies().size() << "; "
            << tables->size() << " other tables\n";
  });
}

}  // namespace

void RegisterCatalog(CLI::App* cmd, CliContext& ctx) {
  cmd->require_subcommand(1);
  cmd->footer(
      "Subcommands: import, validate. See fulcrum help catalog import.\n\n"
      "Examples:\n"
      "  fulcrum catalog validate --json\n"
      "  fulcrum catalog import --format skypilot --provider aws vms.csv -o aws.csv\n"
      "  fulcrum catalog import --format alibaba price.json --instance-type T --region R");
  RegisterImport(*cmd, ctx);
  RegisterValidate(*cmd, ctx);
}

}  // namespace fulcrum::cli
