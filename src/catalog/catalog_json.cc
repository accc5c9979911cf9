#include "catalog/catalog_json.h"

#include <nlohmann/json.hpp>

namespace fulcrum::catalog {
namespace {

template <typename T>
nlohmann::json OrNull(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// "" = none: null in JSON.
nlohmann::json OrNullText(const std::string& text) {
  return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

}  // namespace

nlohmann::json GpuToJson(const Gpu& gpu) {
  return {{"name", gpu.name},
          {"vendor", gpu.vendor},
          {"architecture", gpu.architecture},
          {"family", gpu.family},
          {"aliases", gpu.aliases},
          {"memory_gib", gpu.memory_gib},
          {"memory_bandwidth_gb_per_second", gpu.memory_bandwidth_gbps},
          {"fp32_tflops", OrNull(gpu.fp32_tflops)},
          {"tf32_tflops", OrNull(gpu.tf32_tflops)},
          {"bf16_tflops", OrNull(gpu.bf16_tflops)},
          {"fp16_tflops", OrNull(gpu.fp16_tflops)},
          {"fp8_tflops", OrNull(gpu.fp8_tflops)},
          {"int8_tops", OrNull(gpu.int8_tops)},
          {"fp4_tflops", OrNull(gpu.fp4_tflops)},
          {"nvlink_gb_per_second", OrNull(gpu.nvlink_gbps)},
          {"pcie_gen", OrNull(gpu.pcie_gen)},
          {"tdp_watts", OrNull(gpu.tdp_watts)},
          {"source", gpu.source},
          {"note", gpu.note},
          {"caveat", OrNullText(gpu.caveat)}};
}

nlohmann::json OfferToJson(const Offer& offer) {
  std::string interconnect = InterconnectName(offer.interconnect);
  return {{"provider", offer.provider},
          {"instance_type", offer.instance_type},
          {"region", offer.region},
          {"gpu", offer.gpu},
          {"gpu_count", offer.gpu_count},
          {"vcpus", OrNull(offer.vcpus)},
          {"memory_gib", OrNull(offer.memory_gib)},
          {"on_demand_usd_per_hour", OrNull(offer.on_demand_usd_per_hour)},
          {"spot_usd_per_hour", OrNull(offer.spot_usd_per_hour)},
          {"quoted_currency", offer.currency},
          {"on_demand_billed_per_hour", OrNull(offer.on_demand_billed_per_hour)},
          {"spot_billed_per_hour", OrNull(offer.spot_billed_per_hour)},
          {"interconnect",
           interconnect.empty() ? nlohmann::json(nullptr) : nlohmann::json(interconnect)},
          {"network_gbit_per_second", OrNull(offer.network_gbps)},
          {"source", offer.source},
          {"note", offer.note},
          {"caveat", OrNullText(offer.caveat)},
          {"use", offer.serving_only ? nlohmann::json("serving") : nlohmann::json(nullptr)},
          {"use_source", OrNullText(offer.use_source)},
          {"origin", offer.origin}};
}

nlohmann::json ProviderToJson(const Provider& p) {
  return {{"name", p.name},
          {"display_name", p.display_name},
          {"billing_granularity_seconds", OrNull(p.billing_granularity_seconds)},
          {"minimum_billed_seconds", OrNull(p.minimum_billed_seconds)},
          {"spot_notice_seconds", OrNull(p.spot_notice_seconds)},
          {"spot_max_discount_pct", OrNull(p.spot_max_discount_pct)},
          {"reserved_1y_discount_pct", OrNull(p.reserved_1y_discount_pct)},
          {"reserved_3y_discount_pct", OrNull(p.reserved_3y_discount_pct)},
          {"stopped_instance_bills_disk", OrNull(p.stopped_instance_bills_disk)},
          {"sla_uptime_pct", OrNull(p.sla_uptime_pct)},
          {"gpu_failure_rate_pct_per_year", OrNull(p.gpu_failure_rate_pct_per_year)},
          {"support_24x7", OrNull(p.support_24x7)},
          {"support_response_minutes", OrNull(p.support_response_minutes)},
          {"bare_metal", OrNull(p.bare_metal)},
          {"support_notes", p.support_notes},
          {"source", p.source},
          {"note", p.note},
          {"billing_source", OrNullText(p.billing_source)},
          {"reserved_source", OrNullText(p.reserved_source)},
          {"reserved_terms", OrNullText(p.reserved_terms)},
          {"sla_source", OrNullText(p.sla_source)},
          {"support_source", OrNullText(p.support_source)},
          {"caveat", OrNullText(p.caveat)}};
}

std::string GpuLabel(const Gpu& gpu) {
  if (!gpu.aliases.empty() && gpu.aliases.front().size() < gpu.name.size()) {
    return gpu.aliases.front();
  }
  return gpu.name;
}

}  // namespace fulcrum::catalog
