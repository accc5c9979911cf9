#include "catalog/skypilot_import.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <tuple>

#include "core/csv.h"
#include "core/parse.h"
#include "core/row_reader.h"

namespace fulcrum::catalog {
namespace {

const std::vector<std::string> kRequiredColumns = {
    "InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs",
    "MemoryGiB",    "Price",           "SpotPrice",        "Region"};

// GCP machine families whose GPUs are attached by the machine type itself, with SkyPilot's
// accelerator name for their GPU rows. Source: https://cloud.google.com/compute/docs/gpus
// (A2 Standard = A100 40GB, A2 Ultra = A100 80GB, A3 High/Edge = H100 80GB, A3 Mega = H100 80GB
// Mega, A3 Ultra = H200, A4 = B200, G2 = L4) and the "-<N>g" GPU count in the type name.
struct GcpFamily {
  const char* prefix;
  const char* accelerator;
};
const GcpFamily kGcpFamilies[] = {
    {"a2-highgpu-", "A100"},  {"a2-megagpu-", "A100"}, {"a2-ultragpu-", "A100-80GB"},
    {"a3-highgpu-", "H100"},  {"a3-edgegpu-", "H100"}, {"a3-megagpu-", "H100-MEGA"},
    {"a3-ultragpu-", "H200"}, {"a4-highgpu-", "B200"}, {"g2-standard-", "L4"}};

// SkyPilot accelerator names that are GPU families in fulcrum's catalog, with the variant
// SkyPilot means by them (its catalogs list "A100" for p4d/a2-highgpu (A100 40GB SXM4), "H100" for
// p5/a3-highgpu (H100 80GB SXM5), "V100" for p3 (V100 16GB SXM2); source: the vms.csv rows of
// skypilot-org/skypilot-catalog, e.g. catalogs/v8/aws/vms.csv).
struct AcceleratorName {
  const char* skypilot;
  const char* gpu;
};
const AcceleratorName kFamilyAccelerators[] = {
    {"A100", "A100-SXM4-40GB"}, {"H100", "H100-SXM5-80GB"}, {"V100", "V100-SXM2-16GB"}};

const Gpu* FindAccelerator(const Catalog& catalog, const std::string& accelerator) {
  for (const auto& [skypilot, gpu] : kFamilyAccelerators) {
    if (EqualsIgnoreCase(accelerator, skypilot)) return catalog.FindGpu(gpu);
  }
  return catalog.FindGpu(accelerator);
}

// L4 count per G2 machine type. Source: https://cloud.google.com/compute/docs/gpus#l4-gpus
// (g2-standard-4/8/12/16/32: 1 GPU; -24: 2; -48: 4; -96: 8).
int G2GpuCount(int vcpus) {
  switch (vcpus) {
    case 24:
      return 2;
    case 48:
      return 4;
    case 96:
      return 8;
    default:
      return 1;
  }
}

// The accelerator name and count that a GCP machine type carries; count 0 = none.
std::pair<std::string, int> GcpAccelerator(const std::string& instance_type) {
  for (const GcpFamily& family : kGcpFamilies) {
    std::string prefix = family.prefix;
    if (instance_type.rfind(prefix, 0) != 0) continue;
    std::string rest = instance_type.substr(prefix.size());
    int number = std::atoi(rest.c_str());
    if (number <= 0) return {"", 0};
    if (prefix == "g2-standard-") return {family.accelerator, G2GpuCount(number)};
    size_t digits = rest.find_first_not_of("0123456789");
    if (digits == std::string::npos || rest[digits] != 'g') return {"", 0};
    return {family.accelerator, number};
  }
  return {"", 0};
}

struct Row {
  int line = 0;
  std::string instance_type, accelerator, region, zone;
  double accelerator_count = 0;
  std::optional<double> vcpus, memory_gib, price, spot_price;
};

Result<Row> ReadRow(const RowReader& reader) {
  Row row;
  row.line = reader.line();
  row.instance_type = reader.Text("InstanceType");
  row.accelerator = reader.Text("AcceleratorName");
  FULCRUM_ASSIGN_OR_RETURN(row.region, reader.RequiredText("Region"));
  row.zone = reader.Text("AvailabilityZone");
  FULCRUM_ASSIGN_OR_RETURN(std::optional<double> count,
                           reader.OptionalNumber("AcceleratorCount", 0, 1e5));
  row.accelerator_count = count.value_or(0);
  FULCRUM_ASSIGN_OR_RETURN(row.vcpus, reader.OptionalNumber("vCPUs", 0, 1e7));
  FULCRUM_ASSIGN_OR_RETURN(row.memory_gib, reader.OptionalNumber("MemoryGiB", 0, 1e8));
  FULCRUM_ASSIGN_OR_RETURN(row.price, reader.OptionalNumber("Price", 0, 1e7));
  FULCRUM_ASSIGN_OR_RETURN(row.spot_price, reader.OptionalNumber("SpotPrice", 0, 1e7));
  return row;
}

std::optional<double> Sum(std::optional<double> a, std::optional<double> b) {
  if (!a || !b) return std::nullopt;
  return *a + *b;
}

std::optional<double> Min(std::optional<double> a, std::optional<double> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

std::string GpuRowKey(const std::string& accelerator, int count, const std::string& region,
                      const std::string& zone) {
  return accelerator + "\n" + std::to_string(count) + "\n" + region + "\n" + zone;
}

struct Importer {
  const Catalog& catalog;
  const ImportOptions& options;
  std::string source;
  ImportResult result;
  std::map<std::string, size_t> by_key;        // instance type + region -> offer index
  std::map<std::string, int> zones_per_offer;  // same key -> zone rows merged
  std::map<std::string, const Row*> gpu_rows;  // GCP GPU rows by accelerator/count/region/zone
  std::set<const Row*> used_gpu_rows;

  void Skip(const std::string& reason) { ++result.skipped[reason]; }

  void Add(const Row& row, const std::string& accelerator, int count, std::optional<double> price,
           std::optional<double> spot) {
    const Gpu* gpu = FindAccelerator(catalog, accelerator);
    if (gpu == nullptr) return Skip("accelerator not in the catalog: " + accelerator);
    if (!price && !spot) return Skip("no price");
    std::string key = row.instance_type + "\n" + row.region;
    auto [it, inserted] = by_key.emplace(key, result.offers.size());
    ++zones_per_offer[key];
    if (!inserted) {
      Offer& offer = result.offers[it->second];
      offer.on_demand_usd_per_hour = Min(offer.on_demand_usd_per_hour, price);
      offer.spot_usd_per_hour = Min(offer.spot_usd_per_hour, spot);
      return;
    }
    Offer offer;
    offer.provider = options.provider;
    offer.instance_type = row.instance_type;
    offer.region = row.region;
    offer.gpu = gpu->name;
    offer.gpu_count = count;
    if (row.vcpus && *row.vcpus >= 1) offer.vcpus = static_cast<int>(std::lround(*row.vcpus));
    if (row.memory_gib && *row.memory_gib > 0) offer.memory_gib = row.memory_gib;
    offer.on_demand_usd_per_hour = price;
    offer.spot_usd_per_hour = spot;
    if (gpu->nvlink_gbps && count > 1) offer.interconnect = Interconnect::kNvlink;
    offer.source = source;
    offer.note = "SkyPilot accelerator " + accelerator + " mapped to " + gpu->name;
    if (offer.interconnect == Interconnect::kNvlink) {
      offer.note += "; interconnect inferred from the GPU's NVLink";
    }
    result.offers.push_back(std::move(offer));
  }

  void AddCompleteRow(const Row& row) {
    if (row.accelerator_count < 1 || row.accelerator_count != std::floor(row.accelerator_count)) {
      return Skip("fractional GPU count");
    }
    Add(row, row.accelerator, static_cast<int>(row.accelerator_count), row.price, row.spot_price);
  }

  void AddGcpHostRow(const Row& row) {
    auto [accelerator, count] = GcpAccelerator(row.instance_type);
    if (count == 0) return Skip("no GPU");
    auto gpu_row = gpu_rows.find(GpuRowKey(accelerator, count, row.region, row.zone));
    if (gpu_row == gpu_rows.end()) return Skip("GCP host VM without a matching GPU row");
    const Row& g = *gpu_row->second;
    used_gpu_rows.insert(&g);
    Add(row, accelerator, count, Sum(row.price, g.price), Sum(row.spot_price, g.spot_price));
  }
};

std::string FormatPrice(std::optional<double> value) {
  if (!value) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", *value);
  return buf;
}

}  // namespace

Result<ImportResult> ImportSkyPilotCsv(std::string_view text, const std::string& file_name,
                                       const Catalog& catalog, const ImportOptions& options) {
  FULCRUM_ASSIGN_OR_RETURN(CsvDocument doc, ParseCsv(text, file_name));
  TableSchema schema{kRequiredColumns, {}};
  for (const auto& column : doc.header) {  // SkyPilot adds columns over time: accept any extra
    if (std::find(kRequiredColumns.begin(), kRequiredColumns.end(), column) ==
        kRequiredColumns.end()) {
      schema.optional.emplace_back(Trim(column));
    }
  }
  FULCRUM_ASSIGN_OR_RETURN(ColumnIndex columns, CheckHeader(doc, file_name, schema));
  std::vector<Row> rows;
  for (const CsvRecord& record : doc.records) {
    FULCRUM_ASSIGN_OR_RETURN(Row row, ReadRow(RowReader(file_name, record, columns)));
    rows.push_back(std::move(row));
  }
  Importer importer{catalog, options, options.source, {}, {}, {}, {}, {}};
  if (importer.source.empty()) {
    importer.source = "SkyPilot catalog " + std::filesystem::path(file_name).filename().string();
  }
  importer.result.rows_read = static_cast<int>(rows.size());
  for (const Row& row : rows) {
    if (row.instance_type.empty() && !row.accelerator.empty()) {
      int count = static_cast<int>(row.accelerator_count);
      importer.gpu_rows[GpuRowKey(row.accelerator, count, row.region, row.zone)] = &row;
    }
  }
  for (const Row& row : rows) {
    if (row.instance_type.empty()) continue;  // GCP GPU row: used through its host row
    if (row.accelerator.empty())
      importer.AddGcpHostRow(row);
    else
      importer.AddCompleteRow(row);
  }
  for (const auto& [key, gpu_row] : importer.gpu_rows) {
    if (!importer.used_gpu_rows.count(gpu_row))
      importer.Skip("GCP GPU row without its host VM row");
  }
  for (Offer& offer : importer.result.offers) {
    int zones = importer.zones_per_offer[offer.instance_type + "\n" + offer.region];
    if (zones > 1) offer.note += "; lowest price over " + std::to_string(zones) + " zones";
  }
  std::sort(importer.result.offers.begin(), importer.result.offers.end(),
            [](const Offer& a, const Offer& b) {
              return std::tie(a.instance_type, a.region) < std::tie(b.instance_type, b.region);
            });
  return std::move(importer.result);
}

std::string OffersToCsv(const std::vector<Offer>& offers) {
  std::string out = CsvLine({"provider", "instance_type", "region", "gpu", "gpu_count", "vcpus",
                             "memory_gib", "currency", "on_demand_per_hour", "spot_per_hour",
                             "interconnect", "network_gbps", "source", "note", "caveat"});
  for (const Offer& o : offers) {
    const bool billed = o.on_demand_billed_per_hour || o.spot_billed_per_hour;
    out += CsvLine({o.provider, o.instance_type, o.region, o.gpu, std::to_string(o.gpu_count),
                    o.vcpus ? std::to_string(*o.vcpus) : "", FormatPrice(o.memory_gib),
                    billed ? o.currency : "USD",
                    FormatPrice(billed ? o.on_demand_billed_per_hour : o.on_demand_usd_per_hour),
                    FormatPrice(billed ? o.spot_billed_per_hour : o.spot_usd_per_hour),
                    InterconnectName(o.interconnect), FormatPrice(o.network_gbps), o.source, o.note,
                    o.caveat});
  }
  return out;
}

}  // namespace fulcrum::catalog
