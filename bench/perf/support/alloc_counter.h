// Counts heap allocations in a benchmark executable: alloc_counter.cc replaces the global
// operator new/delete (linked into every bench/perf/*_bench executable) and counts each `new`, so a
// benchmark can prove its hot loop allocates nothing. Thread-safe (relaxed atomic counter).
#pragma once

namespace fulcrum::bench_support {

// Number of operator new calls since the process started.
long AllocationCount();

}  // namespace fulcrum::bench_support
