#pragma once

// What a fuzz target asserts beyond "no crash, no sanitizer report": a property that must hold
// for every input (a round trip, an agreement between two readers). A failed check aborts, which
// libFuzzer records as a crash with the input that caused it.

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace vgpu::fuzz {

inline void Check(bool ok, const char* what, std::string_view detail = {}) {
  if (ok) return;
  std::fprintf(stderr, "fuzz check failed: %s%s%.*s\n", what, detail.empty() ? "" : ": ",
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

}  // namespace vgpu::fuzz
