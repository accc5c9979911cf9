// The one parallel-for of the library: runs a body over the indices [0, count) on a fixed number
// of threads (the calling thread is one of them), handing out chunks of consecutive indices in
// order to whichever thread is free. Every index runs exactly once; a body that writes only its
// own index's slot gives results that do not depend on the thread count. The planner, the spot
// simulator and serve-plan use it; no other room of the planner side starts threads of its own.
// Thread-safe (no shared state between calls); the body must be safe to run concurrently.
#pragma once

#include <cstddef>
#include <functional>

namespace fulcrum {

// `requested` <= 0: the machine's hardware concurrency (at least 1); otherwise `requested`.
int ResolveThreadCount(int requested);

// The threads a ParallelFor over `count` indices in chunks of `chunk` would use: at most
// ResolveThreadCount(threads), at most one per chunk, at least 1.
int ThreadsFor(size_t count, int threads, size_t chunk = 1);

// Runs body(begin, end) over consecutive chunks of at most `chunk` indices covering [0, count),
// on ThreadsFor(count, threads, chunk) threads, and returns when all have run. Where a thread
// cannot be started the others do its share. An exception thrown by the body is rethrown on the
// calling thread after every thread has stopped (the first one thrown; chunks not yet started
// are skipped). Returns the number of threads used.
int ParallelFor(size_t count, int threads, size_t chunk,
                const std::function<void(size_t begin, size_t end)>& body);

}  // namespace fulcrum
