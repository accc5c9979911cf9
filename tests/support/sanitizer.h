// Whether this build runs under a sanitizer, and what a test that preloads a library into a child
// (Debian's libfaketime, to step its wall clock) must preload with it.
#pragma once

#include <string>

namespace fulcrum::testing {

// Sanitizer builds keep shadow memory and freed-block quarantines: their RSS says nothing about
// the buffers a test bounds, so memory bounds are checked in the plain builds only.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// The LD_PRELOAD value that runs a child of this test under libfaketime (package faketime,
// libfaketimeMT.so.1), or "" when it is not installed. In a build whose sanitizer runtime is a
// shared library (g++'s libasan), that runtime comes first: ASan refuses to start when another
// preloaded library precedes it ("ASan runtime does not come first in initial library list").
std::string FaketimePreload();

}  // namespace fulcrum::testing
