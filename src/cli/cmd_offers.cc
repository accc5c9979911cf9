// `fulcrum offers`: instance offers of the catalog, filtered and ranked.
#include <algorithm>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "catalog/catalog_json.h"
#include "catalog/offer_query.h"
#include "cli/command.h"
#include "core/paths.h"
#include "core/table.h"

namespace fulcrum::cli {
namespace {

struct OffersFlags {
  std::vector<std::string> gpus;
  int min_gpus = 1;
  double max_price = -1;
  std::vector<std::string> providers;
  std::vector<std::string> regions;
  bool spot = false;
  std::string sort = "price";
  int limit = 0;
  bool json = false;
};

std::string Price(const std::optional<double>& usd) { return usd ? FormatNumber(*usd, 2) : "-"; }

// "unknown" for an offer of no citable price list, else the price or "-" (not offered).
std::string OfferPrice(const catalog::Offer& offer, const std::optional<double>& usd) {
  return catalog::OfferPriceUnknown(offer) ? "unknown" : Price(usd);
}

std::string Optional(const std::optional<int>& v) { return v ? std::to_string(*v) : "-"; }
std::string Optional(const std::optional<double>& v) { return v ? FormatNumber(*v, 0) : "-"; }

void PrintJsonView(CliContext& ctx, const std::vector<catalog::RankedOffer>& offers) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& ranked : offers) {
    nlohmann::json item = catalog::OfferToJson(*ranked.offer);
    auto or_null = [](const std::optional<double>& v) {
      return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
    };
    item["usd_per_hour"] = or_null(ranked.usd_per_hour);
    item["usd_per_gpu_hour"] = or_null(ranked.usd_per_gpu_hour);
    item["bf16_tflops_per_usd"] = or_null(ranked.bf16_tflops_per_usd);
    list.push_back(std::move(item));
  }
  PrintJson(ctx, {{"offers", list}});
}

void PrintTable(CliContext& ctx, const std::vector<catalog::RankedOffer>& offers,
                const catalog::OfferQuery& query, size_t total) {
  bool tflops = query.sort == catalog::OfferSort::kBf16TflopsPerUsd;
  std::vector<std::string> headers = {"PROVIDER", "INSTANCE", "GPUS",     "VCPU",    "MEM GIB",
                                      "REGION",   "$/H",      "SPOT $/H", "$/GPU-H", "BILLED"};
  std::vector<Align> align = {Align::kLeft,  Align::kLeft, Align::kLeft,  Align::kRight,
                              Align::kRight, Align::kLeft, Align::kRight, Align::kRight,
                              Align::kRight, Align::kLeft};
  if (tflops) {
    headers.push_back("TFLOPS/$");
    align.push_back(Align::kRight);
  }
  Table table(headers, align);
  for (const auto& r : offers) {
    std::string gpu = r.gpu ? catalog::GpuLabel(*r.gpu) : r.offer->gpu;
    std::vector<std::string> row = {r.offer->provider,
                                    r.offer->instance_type + (r.offer->caveat.empty() ? "" : " !"),
                                    std::to_string(r.offer->gpu_count) + "x " + gpu,
                                    Optional(r.offer->vcpus),
                                    Optional(r.offer->memory_gib),
                                    r.offer->region,
                                    OfferPrice(*r.offer, r.offer->on_demand_usd_per_hour),
                                    OfferPrice(*r.offer, r.offer->spot_usd_per_hour),
                                    OfferPrice(*r.offer, r.usd_per_gpu_hour),
                                    r.offer->currency};
    if (tflops)
      row.push_back(r.bf16_tflops_per_usd ? FormatNumber(*r.bf16_tflops_per_usd, 1) : "-");
    table.AddRow(std::move(row));
  }
  ctx.out << table.Render();
  ctx.out << "\n"
          << offers.size() << " of " << total
          << " matching offers; USD per instance-hour (BILLED = currency the provider bills in)"
          << (query.spot ? ", ranked by spot price" : "") << "; '-' = not offered.\n";
  bool caveats = std::any_of(offers.begin(), offers.end(), [](const catalog::RankedOffer& r) {
    return !r.offer->caveat.empty();
  });
  if (caveats) ctx.out << "! = the catalog has a caveat on the row (fulcrum offers --json).\n";
  bool unknown = std::any_of(offers.begin(), offers.end(), [](const catalog::RankedOffer& r) {
    return catalog::OfferPriceUnknown(*r.offer);
  });
  if (unknown) {
    ctx.out << "unknown = no citable price list (ranked last; plan skips it): save the provider's\n"
               "price response and run fulcrum catalog import (see fulcrum help catalog import).\n";
  }
}

void RunOffers(CliContext& ctx, const OffersFlags& flags) {
  catalog::OfferQuery query;
  query.gpus = flags.gpus;
  query.min_gpus = flags.min_gpus;
  if (flags.max_price >= 0) query.max_usd_per_hour = flags.max_price;
  query.providers = flags.providers;
  query.regions = flags.regions;
  query.spot = flags.spot;
  auto sort = catalog::ParseOfferSort(flags.sort);
  if (!sort.ok()) return ReportError(ctx, sort.status());
  query.sort = *sort;
  auto loaded = catalog::Catalog::Load(DefaultCatalogDir(ctx.catalog_dir));
  if (!loaded.ok()) return ReportError(ctx, loaded.status());
  auto all = catalog::QueryOffers(*loaded, query);
  if (!all.ok()) return ReportError(ctx, all.status());
  size_t total = all->size();
  if (flags.limit > 0 && all->size() > static_cast<size_t>(flags.limit)) all->resize(flags.limit);
  if (flags.json) return PrintJsonView(ctx, *all);
  PrintTable(ctx, *all, query, total);
}

}  // namespace

void RegisterOffers(CLI::App* cmd, CliContext& ctx) {
  cmd->footer(
      "Prices are USD per hour of the whole instance (converted from other currencies with\n"
      "catalog/currency.csv). Offers come from the catalog's offers.csv plus your own files in\n"
      "$FULCRUM_OFFERS_DIR or ~/.config/fulcrum/offers.d/*.csv, which replace shipped offers of\n"
      "the same provider, instance type and region.\n\n"
      "Examples:\n"
      "  fulcrum offers --gpu H100 --min-gpus 8 --sort price --limit 10\n"
      "  fulcrum offers --gpu A100,A100-80GB --provider aws,gcp --spot\n"
      "  fulcrum offers --sort bf16-tflops-per-usd --max-price 10 --json");
  auto flags = std::make_shared<OffersFlags>();
  cmd->add_option("--gpu", flags->gpus,
                  "Only these GPU models (names, aliases or families such as A100 = every A100 "
                  "variant; case-insensitive, comma-separated); default: all")
      ->delimiter(',')
      ->type_name("GPU[,GPU...]");
  cmd->add_option("--min-gpus", flags->min_gpus, "Only instances with at least N GPUs")
      ->check(CLI::Range(1, 1024))
      ->default_val(1)
      ->type_name("N");
  cmd->add_option("--max-price", flags->max_price,
                  "Only offers costing at most USD per instance-hour (the spot price with --spot)")
      ->check(CLI::NonNegativeNumber)
      ->type_name("USD");
  cmd->add_option("--provider", flags->providers,
                  "Only these providers (ids as in `fulcrum providers`, comma-separated)")
      ->delimiter(',')
      ->type_name("NAME[,NAME...]");
  cmd->add_option("--region", flags->regions,
                  "Only regions containing TEXT (case-insensitive, comma-separated), e.g. "
                  "us-east or EU")
      ->delimiter(',')
      ->type_name("TEXT[,TEXT...]");
  cmd->add_flag("--spot", flags->spot, "Use spot prices: offers without a spot price are left out");
  cmd->add_option("--sort", flags->sort,
                  "price (instance-hour), price-per-gpu (GPU-hour) or bf16-tflops-per-usd "
                  "(dense bf16 TFLOP/s per USD-hour, highest first)")
      ->default_val("price")
      ->type_name("KEY");
  cmd->add_option("--limit", flags->limit, "Show at most N offers (default: all)")
      ->check(CLI::PositiveNumber)
      ->type_name("N");
  cmd->add_flag("--json", flags->json,
                "Print {\"offers\": [...]} with on_demand_usd_per_hour, spot_usd_per_hour (null = "
                "not offered; both null with caveat price-unknown = no citable price list), "
                "usd_per_hour (the price ranked), usd_per_gpu_hour, bf16_tflops_per_usd, "
                "quoted_currency with on_demand_billed_per_hour and spot_billed_per_hour (the "
                "prices as billed), network_gbit_per_second, interconnect, source, use "
                "(\"serving\": the provider documents the machine type for inference only; "
                "plan never trains on it) with use_source");
  cmd->callback([&ctx, flags] { RunOffers(ctx, *flags); });
}

}  // namespace fulcrum::cli
