// Reading model architectures from text: fulcrum's preset YAML (catalog/models/<name>.yaml) and
// HuggingFace config.json files (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM,
// MixtralForCausalLM, DeepseekForCausalLM, DeepseekV2ForCausalLM, DeepseekV3ForCausalLM,
// Qwen2MoeForCausalLM, GPT2LMHeadModel, GPTNeoXForCausalLM, BertForMaskedLM, MptForCausalLM).
// Parsers never throw;
// a bad input is refused with "<origin>: <field>: expected ..., found ..." or names the missing
// field. Pure functions except the *File / preset loaders, which read files. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "workload/model.h"

namespace fulcrum::workload {

// Parses one preset document. `origin` (a file name) prefixes error messages.
Result<Model> ParseModelYaml(std::string_view text, const std::string& origin);

// Parses a HuggingFace config.json. The architecture comes from "architectures"[0] (or
// "model_type" when "architectures" is absent).
Result<Model> ParseHfConfig(std::string_view text, const std::string& origin);
Result<Model> LoadHfConfigFile(const std::string& path);

// Preset names in <catalog_dir>/models (file stems, sorted).
std::vector<std::string> ListModelPresets(const std::string& catalog_dir);
// Loads <catalog_dir>/models/<name>.yaml (name case-insensitive); NotFound lists the presets.
Result<Model> LoadModelPreset(const std::string& catalog_dir, std::string_view name);

}  // namespace fulcrum::workload
