// Small in-memory catalogs for the catalog module's unit tests (header-only, test use only).
#pragma once

#include <string>

#include "catalog/catalog.h"

namespace fulcrum::catalog::testing {

inline CatalogFiles SmallCatalogFiles() {
  CatalogFiles files;
  files.gpus = {"gpus.csv",
                "name,vendor,architecture,aliases,memory_gib,memory_bandwidth_gbps,fp32_tflops,"
                "tf32_tflops,bf16_tflops,fp16_tflops,fp8_tflops,nvlink_gbps,pcie_gen,tdp_watts,"
                "source\n"
                "H100-SXM5-80GB,NVIDIA,Hopper,H100;H100-MEGA,80,3350,67,494.5,989,989,1979,900,,"
                "700,s\n"
                "A100-SXM4-40GB,NVIDIA,Ampere,A100,40,1555,19.5,156,312,312,,600,,400,s\n"
                "A10G,NVIDIA,Ampere,,24,600,,,,70,,,,,s\n"
                "L4,NVIDIA,Ada,,24,300,30.3,60,121,121,,,4,72,s\n"
                "T4,NVIDIA,Turing,,16,320,8.1,,,65,,,3,70,s\n"};
  files.providers = {"providers.csv",
                     "provider,display_name,billing_granularity_seconds,"
                     "gpu_failure_rate_pct_per_year,support_24x7,support_response_minutes,source\n"
                     "aws,AWS,1,,,,s\n"
                     "gcp,GCP,,0.3,yes,10,s\n"
                     "slowco,SlowCo,3600,0.9,no,,s\n"
                     "halfco,HalfCo,60,,yes,,s\n"};
  files.offers = {"offers.csv",
                  "provider,instance_type,region,gpu,gpu_count,on_demand_per_hour,spot_per_hour,"
                  "network_gbps,source\n"
                  "aws,p5.48xlarge,us-east-1,H100,8,55.04,14.246,3200,s\n"
                  "gcp,a3-highgpu-8g,us-central1,H100,8,43.06615,26.83013,800,s\n"
                  "gcp,a3-highgpu-1g,us-central1,H100,1,5.38327,3.35377,,s\n"
                  "aws,g5.xlarge,us-east-1,A10G,1,1.006,0.4591,,s\n"
                  "gcp,g2-standard-4,us-central1,L4,1,0.70683,,,s\n"
                  "slowco,box8,eu-west,A100,8,10,,10,s\n"
                  "halfco,t4x1,eu-west,T4,1,0.3,,,s\n"};
  return files;
}

}  // namespace fulcrum::catalog::testing
