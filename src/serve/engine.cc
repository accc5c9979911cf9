#include "serve/engine.h"

#include <algorithm>

#include "core/input_error.h"
#include "core/parse.h"
#include "core/row_reader.h"
#include "core/text_file.h"

namespace fulcrum::serve {
namespace {

const TableSchema kEngineSchema = {
    {"engine", "scheduler", "batching", "prefill_chunk", "precisions", "vendors", "source"},
    {"note", "tp_allreduce", "tensor_parallel"}};

// A ';'-separated list of names, each checked with `parse`.
template <typename T, typename Parse>
Result<std::vector<T>> NameList(const RowReader& row, const std::string& column, Parse parse,
                                const std::string& expected) {
  std::vector<T> out;
  FULCRUM_ASSIGN_OR_RETURN(std::string text, row.RequiredText(column));
  for (const std::string& item : Split(text, ';')) {
    const auto parsed = parse(Trim(item));
    if (!parsed.ok()) {
      std::vector<std::string> nearest;
      if (parsed.status().detail()) nearest = parsed.status().detail()->nearest;
      return row.Error(column, expected, nearest);
    }
    out.push_back(*parsed);
  }
  return out;
}

}  // namespace

Result<std::vector<EngineProfile>> ParseEngineTable(std::string_view text,
                                                    const std::string& file) {
  FULCRUM_ASSIGN_OR_RETURN(CsvTable table, ParseTable(text, file, kEngineSchema));
  std::vector<EngineProfile> out(kEngineCount);
  std::vector<bool> seen(kEngineCount, false);
  for (size_t i = 0; i < table.size(); ++i) {
    const RowReader row = table.Row(i);
    FULCRUM_ASSIGN_OR_RETURN(std::string name, row.RequiredText("engine"));
    const Result<Engine> engine = ParseEngine(name);
    if (!engine.ok()) return row.Error("engine", "one of " + JoinNames(EngineNames()));
    const size_t index = static_cast<size_t>(*engine);
    if (seen[index]) return row.Error("engine", "each engine once");
    seen[index] = true;
    EngineProfile& p = out[index];
    p.engine = *engine;
    FULCRUM_ASSIGN_OR_RETURN(p.scheduler, row.RequiredText("scheduler"));
    FULCRUM_ASSIGN_OR_RETURN(p.source, row.RequiredText("source"));
    FULCRUM_ASSIGN_OR_RETURN(p.prefill_chunk, row.Int("prefill_chunk", 0, 1 << 24));
    FULCRUM_ASSIGN_OR_RETURN(
        p.batching, NameList<Batching>(row, "batching", ParseBatching, "continuous;static names"));
    FULCRUM_ASSIGN_OR_RETURN(p.precisions, NameList<Precision>(row, "precisions", ParsePrecision,
                                                               "precision names separated by ;"));
    FULCRUM_ASSIGN_OR_RETURN(std::string vendors, row.RequiredText("vendors"));
    for (const std::string& v : Split(vendors, ';')) p.vendors.emplace_back(Trim(v));
    const std::string allreduce = row.Text("tp_allreduce");
    if (!allreduce.empty() && allreduce != "ring" && allreduce != "custom") {
      return row.Error("tp_allreduce", "ring or custom");
    }
    p.custom_allreduce = allreduce == "custom";
    const std::string tensor_parallel = row.Text("tensor_parallel");
    if (!tensor_parallel.empty() && tensor_parallel != "yes" && tensor_parallel != "no") {
      return row.Error("tensor_parallel", "yes or no");
    }
    p.tensor_parallel = tensor_parallel != "no";
  }
  for (size_t i = 0; i < kEngineCount; ++i) {
    if (!seen[i]) {
      return Status::InvalidInput(file + ": engine " +
                                  std::string(EngineName(static_cast<Engine>(i))) +
                                  ": expected a row, found none");
    }
  }
  return out;
}

Result<std::vector<EngineProfile>> LoadEngineTable(const std::string& catalog_dir) {
  const std::string path = catalog_dir + "/serving_engines.csv";
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "the serving engine table (CSV)"));
  return ParseEngineTable(text, path);
}

Result<EngineProfile> LoadEngine(const std::string& catalog_dir, std::string_view name) {
  FULCRUM_ASSIGN_OR_RETURN(Engine engine, ParseEngine(name));
  FULCRUM_ASSIGN_OR_RETURN(std::vector<EngineProfile> table, LoadEngineTable(catalog_dir));
  return table[static_cast<size_t>(engine)];
}

}  // namespace fulcrum::serve
