#include "core/parallel.h"

#include <atomic>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace fulcrum {
namespace {

TEST(ParallelTest, EveryIndexRunsExactlyOnceWhateverTheThreadsAndChunks) {
  for (int threads : {1, 2, 3, 8}) {
    for (size_t chunk : {1, 3, 64, 1000}) {
      std::vector<std::atomic<int>> runs(517);
      ParallelFor(runs.size(), threads, chunk, [&](size_t begin, size_t end) {
        ASSERT_LT(begin, end);
        ASSERT_LE(end - begin, chunk);
        for (size_t i = begin; i < end; ++i) runs[i].fetch_add(1);
      });
      for (size_t i = 0; i < runs.size(); ++i) {
        EXPECT_EQ(runs[i].load(), 1)
            << "index " << i << " threads " << threads << " chunk " << chunk;
      }
    }
  }
}

TEST(ParallelTest, ResultsWrittenPerIndexDoNotDependOnTheThreadCount) {
  auto run = [](int threads) {
    std::vector<double> out(1000);
    ParallelFor(out.size(), threads, 7, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) out[i] = static_cast<double>(i * i) / 3.0;
    });
    return out;
  };
  EXPECT_EQ(run(1), run(4));
}

TEST(ParallelTest, UsesNoMoreThreadsThanChunksOrAskedFor) {
  EXPECT_EQ(ThreadsFor(0, 8, 1), 1);
  EXPECT_EQ(ThreadsFor(3, 8, 1), 3);
  EXPECT_EQ(ThreadsFor(1000, 8, 256), 4);
  EXPECT_EQ(ThreadsFor(1000, 2, 1), 2);
  EXPECT_GE(ResolveThreadCount(0), 1);
  EXPECT_EQ(ResolveThreadCount(5), 5);
  std::set<std::thread::id> ids;
  std::mutex m;
  const int used = ParallelFor(2, 8, 1, [&](size_t, size_t) {
    const std::lock_guard<std::mutex> lock(m);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_LE(used, 2);
  EXPECT_LE(ids.size(), 2u);
}

TEST(ParallelTest, ZeroIndicesRunNothing) {
  int calls = 0;
  EXPECT_EQ(ParallelFor(0, 4, 1, [&](size_t, size_t) { ++calls; }), 1);
  EXPECT_EQ(calls, 0);
}

TEST(ParallelTest, AnExceptionReachesTheCallerAfterEveryThreadStopped) {
  std::atomic<int> ran{0};
  EXPECT_THROW(ParallelFor(100, 4, 1,
                           [&](size_t begin, size_t) {
                             ran.fetch_add(1);
                             if (begin == 10) throw std::runtime_error("chunk 10");
                           }),
               std::runtime_error);
  EXPECT_GE(ran.load(), 11);  // chunks 0..10 were handed out in order before the throw
}

}  // namespace
}  // namespace fulcrum
