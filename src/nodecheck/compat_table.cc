#include "nodecheck/compat_table.h"

#include <cctype>

#include "core/parse.h"
#include "core/row_reader.h"

namespace fulcrum::nodecheck {
namespace {

const TableSchema kForwardCompatSchema = {
    {"cuda_major", "driver_branch", "min_driver_linux", "source"}, {"branch_kind", "note"}};
const TableSchema kGpuArchSchema = {{"gpu", "match", "compute_capability", "segment", "source"},
                                    {"note"}};
const TableSchema kTorchWheelSchema = {
    {"torch", "variant", "cuda", "pypi_default", "arch_list", "index_url", "source"}, {"note"}};
const TableSchema kAsOfSchema = {{"table", "data_as_of", "newest", "source"}, {}};

// "MAJOR.MINOR" of whole numbers.
bool IsMajorMinor(const std::string& text) {
  auto parts = Split(text, '.');
  return parts.size() == 2 && ParseInt(parts[0]).ok() && ParseInt(parts[1]).ok() &&
         *ParseInt(parts[0]) >= 0 && *ParseInt(parts[1]) >= 0;
}

Result<std::vector<ForwardCompatRow>> LoadForwardCompat(const std::string& dir) {
  FULCRUM_ASSIGN_OR_RETURN(CsvTable table,
                           LoadTableFile(dir + "/cuda_forward_compat.csv", kForwardCompatSchema));
  std::vector<ForwardCompatRow> rows;
  for (size_t i = 0; i < table.size(); ++i) {
    RowReader row = table.Row(i);
    ForwardCompatRow r;
    FULCRUM_ASSIGN_OR_RETURN(r.cuda_major, row.Int("cuda_major", 1, 1000));
    FULCRUM_ASSIGN_OR_RETURN(r.driver_branch, row.Int("driver_branch", 1, 100000));
    FULCRUM_ASSIGN_OR_RETURN(r.min_driver_linux, row.RequiredText("min_driver_linux"));
    if (Split(r.min_driver_linux, '.').front() != std::to_string(r.driver_branch))
      return row.Error("min_driver_linux", "a driver of branch " + std::to_string(r.driver_branch));
    FULCRUM_ASSIGN_OR_RETURN(r.source, row.RequiredText("source"));
    rows.push_back(std::move(r));
  }
  return rows;
}

Result<std::vector<GpuArchRow>> LoadGpuArch(const std::string& dir) {
  FULCRUM_ASSIGN_OR_RETURN(CsvTable table,
                           LoadTableFile(dir + "/cuda_gpu_arch.csv", kGpuArchSchema));
  std::vector<GpuArchRow> rows;
  for (size_t i = 0; i < table.size(); ++i) {
    RowReader row = table.Row(i);
    GpuArchRow r;
    FULCRUM_ASSIGN_OR_RETURN(r.gpu, row.RequiredText("gpu"));
    for (const std::string& m : Split(row.Text("match"), ';')) {
      if (!GpuWords(m).empty()) r.match.push_back(GpuWords(m));
    }
    if (r.match.empty()) return row.Error("match", "one or more GPU names separated by ';'");
    std::string cc = row.Text("compute_capability");
    if (!IsMajorMinor(cc)) return row.Error("compute_capability", "MAJOR.MINOR such as 9.0");
    r.cc_major = static_cast<int>(*ParseInt(Split(cc, '.')[0]));
    r.cc_minor = static_cast<int>(*ParseInt(Split(cc, '.')[1]));
    r.segment = row.Text("segment");
    if (r.segment != "data-center" && r.segment != "workstation" && r.segment != "geforce")
      return row.Error("segment", "data-center, workstation or geforce");
    FULCRUM_ASSIGN_OR_RETURN(r.source, row.RequiredText("source"));
    rows.push_back(std::move(r));
  }
  return rows;
}

// "sm_90" or "compute_120".
bool IsArchName(const std::string& arch) {
  for (const char* prefix : {"sm_", "compute_"}) {
    std::string p = prefix;
    if (arch.rfind(p, 0) == 0 && arch.size() > p.size() && ParseInt(arch.substr(p.size())).ok())
      return true;
  }
  return false;
}

Result<std::vector<TorchWheelRow>> LoadTorchWheels(const std::string& dir) {
  FULCRUM_ASSIGN_OR_RETURN(CsvTable table,
                           LoadTableFile(dir + "/torch_wheels.csv", kTorchWheelSchema));
  std::vector<TorchWheelRow> rows;
  for (size_t i = 0; i < table.size(); ++i) {
    RowReader row = table.Row(i);
    TorchWheelRow r;
    r.torch = row.Text("torch");
    if (!IsMajorMinor(r.torch)) return row.Error("torch", "a release MAJOR.MINOR such as 2.4");
    r.cuda = row.Text("cuda");
    if (!IsMajorMinor(r.cuda)) return row.Error("cuda", "MAJOR.MINOR such as 12.1");
    r.variant = row.Text("variant");
    std::string expected = "cu" + Split(r.cuda, '.')[0] + Split(r.cuda, '.')[1];
    if (r.variant != expected)
      return row.Error("variant", expected + " (from cuda " + r.cuda + ")");
    FULCRUM_ASSIGN_OR_RETURN(r.pypi_default, row.Bool("pypi_default"));
    for (const std::string& arch : Split(row.Text("arch_list"), ';')) {
      if (!IsArchName(std::string(Trim(arch))))
        return row.Error("arch_list", "sm_XY or compute_XY names separated by ';'");
      r.arch_list.emplace_back(Trim(arch));
    }
    FULCRUM_ASSIGN_OR_RETURN(r.index_url, row.RequiredText("index_url"));
    FULCRUM_ASSIGN_OR_RETURN(r.source, row.RequiredText("source"));
    if (!rows.empty() && CompareVersions(rows.back().torch, r.torch) > 0)
      return row.Error("torch", "releases in ascending order (after " + rows.back().torch + ")");
    rows.push_back(std::move(r));
  }
  return rows;
}

Status LoadAsOf(const std::string& dir, CompatTables& tables) {
  FULCRUM_ASSIGN_OR_RETURN(CsvTable table, LoadTableFile(dir + "/compat_as_of.csv", kAsOfSchema));
  for (size_t i = 0; i < table.size(); ++i) {
    RowReader row = table.Row(i);
    std::string name = row.Text("table");
    std::string as_of = row.Text("data_as_of") + " (" + row.Text("newest") + ")";
    if (name == "torch_wheels.csv")
      tables.torch_as_of = as_of;
    else if (name == "cuda_driver.csv")
      tables.driver_as_of = as_of;
    else
      return row.Error("table", "torch_wheels.csv or cuda_driver.csv");
  }
  if (tables.torch_as_of.empty() || tables.driver_as_of.empty())
    return Status::InvalidInput(dir +
                                "/compat_as_of.csv: expected rows for torch_wheels.csv and "
                                "cuda_driver.csv");
  return Status::Ok();
}

}  // namespace

std::string GpuWords(const std::string& name) {
  std::string out;
  for (char c : name) {
    char w = (c == '-' || c == '_')
                 ? ' '
                 : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (w == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += w;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

const GpuArchRow* FindGpu(const CompatTables& tables, const std::string& name) {
  std::string words(1, ' ');  // appended, not " " + ...: g++ 12 -O3 -Wrestrict false positive
  words.append(GpuWords(name)).push_back(' ');
  const GpuArchRow* best = nullptr;
  size_t best_length = 0;
  for (const GpuArchRow& row : tables.gpus) {
    for (const std::string& m : row.match) {
      std::string needle(1, ' ');
      needle.append(m).push_back(' ');
      if (words.find(needle) != std::string::npos && m.size() > best_length) {
        best = &row;
        best_length = m.size();
      }
    }
  }
  return best;
}

std::string TorchRelease(const std::string& version) {
  std::string release;
  int dots = 0;
  for (char c : version) {
    if (c == '.' && ++dots == 2) break;
    if (c != '.' && !std::isdigit(static_cast<unsigned char>(c))) break;
    release += c;
  }
  return release;
}

Result<CompatTables> LoadCompatTables(const std::string& catalog_dir) {
  CompatTables tables;
  FULCRUM_ASSIGN_OR_RETURN(tables.driver, LoadDriverTable(catalog_dir));
  FULCRUM_ASSIGN_OR_RETURN(tables.forward_compat, LoadForwardCompat(catalog_dir));
  FULCRUM_ASSIGN_OR_RETURN(tables.gpus, LoadGpuArch(catalog_dir));
  FULCRUM_ASSIGN_OR_RETURN(tables.torch_wheels, LoadTorchWheels(catalog_dir));
  FULCRUM_RETURN_IF_ERROR(LoadAsOf(catalog_dir, tables));
  return tables;
}

}  // namespace fulcrum::nodecheck
