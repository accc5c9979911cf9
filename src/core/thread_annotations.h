// Clang thread-safety annotations (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html), the
// same macro set leveldb's port/thread_annotations.h uses. With clang and -Wthread-safety the
// compiler checks that a GUARDED_BY member is only touched with its mutex held and that a
// REQUIRES function is only called under it; with other compilers the macros expand to nothing.
// Use them with fulcrum::Mutex (core/mutex.h): libstdc++'s std::mutex carries no annotations.
#pragma once

#if defined(__clang__)
#define FULCRUM_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define FULCRUM_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) FULCRUM_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY FULCRUM_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) FULCRUM_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) FULCRUM_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) FULCRUM_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) FULCRUM_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) FULCRUM_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) FULCRUM_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) FULCRUM_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) FULCRUM_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) FULCRUM_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) FULCRUM_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) FULCRUM_THREAD_ANNOTATION(assert_capability(x))
#define RETURN_CAPABILITY(x) FULCRUM_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS FULCRUM_THREAD_ANNOTATION(no_thread_safety_analysis)
