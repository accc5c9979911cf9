#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

#include "core/mutex.h"

namespace fulcrum {

int ResolveThreadCount(int requested) {
  if (requested > 0) return requested;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int ThreadsFor(size_t count, int threads, size_t chunk) {
  const size_t chunks = (count + std::max<size_t>(1, chunk) - 1) / std::max<size_t>(1, chunk);
  const size_t resolved = static_cast<size_t>(ResolveThreadCount(threads));
  return static_cast<int>(std::max<size_t>(1, std::min(resolved, chunks)));
}

int ParallelFor(size_t count, int threads, size_t chunk,
                const std::function<void(size_t begin, size_t end)>& body) {
  chunk = std::max<size_t>(1, chunk);
  const int used = ThreadsFor(count, threads, chunk);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  struct FirstError {
    Mutex mutex;
    std::exception_ptr error GUARDED_BY(mutex);  // the first exception the body threw
  } first;
  auto worker = [&] {
    // A chunk handed out is always run: a failure stops the handing out, not a chunk taken.
    while (!failed.load()) {
      const size_t begin = next.fetch_add(chunk);
      if (begin >= count) break;
      try {
        body(begin, std::min(count, begin + chunk));
      } catch (...) {
        const MutexLock lock(first.mutex);
        if (!first.error) first.error = std::current_exception();
        failed.store(true);
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(used - 1));
  for (int i = 1; i < used; ++i) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // no thread to be had: the others (at least the calling one) do its share
    }
  }
  worker();
  for (std::thread& t : pool) t.join();
  std::exception_ptr error;
  {
    const MutexLock lock(first.mutex);
    error = first.error;
  }
  if (error) std::rethrow_exception(error);
  return static_cast<int>(pool.size()) + 1;
}

}  // namespace fulcrum
