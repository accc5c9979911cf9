// Stand-in for libFuzzer where it is not available (g++ builds): replays every file of the
// corpus directory given as argv[1], then feeds --iterations=N seeded mutations of those inputs
// (byte flips, insertions, deletions, splices) to LLVMFuzzerTestOneInput. Deterministic: the
// same corpus and N give the same inputs. A crash or sanitizer report fails the ctest test.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  long iterations = 10000;
  std::vector<std::string> corpus;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--iterations=", 0) == 0) {
      iterations = std::stol(arg.substr(13));
      continue;
    }
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      std::vector<fs::path> files;
      for (const auto& entry : fs::directory_iterator(arg)) files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      for (const auto& file : files) {
        std::ifstream in(file, std::ios::binary);
        corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      }
    }
  }
  if (corpus.empty()) corpus.push_back("");
  for (const auto& input : corpus) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  }
  std::mt19937_64 rng(12345);
  for (long i = 0; i < iterations; ++i) {
    std::string input = corpus[rng() % corpus.size()];
    int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 5) {
        case 0:
          if (!input.empty()) input[rng() % input.size()] = static_cast<char>(rng());
          break;
        case 1:
          input.insert(input.begin() + static_cast<long>(input.empty() ? 0 : rng() % input.size()),
                       "\n,\":[]{}-#\t\0\xff"[rng() % 13]);
          break;
        case 2:
          if (!input.empty()) {
            size_t pos = rng() % input.size();
            input.erase(pos, 1 + rng() % std::min<size_t>(16, input.size() - pos));
          }
          break;
        case 3: {
          const std::string& other = corpus[rng() % corpus.size()];
          if (!other.empty()) {
            size_t from = rng() % other.size();
            input.insert(input.empty() ? 0 : rng() % input.size(), other.substr(from, rng() % 64));
          }
          break;
        }
        case 4:
          if (!input.empty()) input.resize(rng() % input.size());
          break;
      }
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  }
  std::printf("fuzz driver: %zu corpus inputs, %ld mutations, no crash\n", corpus.size(),
              iterations);
  return 0;
}
