// The suite reports the attacked process's memory. AddressSanitizer holds freed memory back
// (its quarantine, 256 MiB by default) before reusing it, which would read as the abuse's cost;
// a small quarantine keeps the figures close to a release build's, and still catches a use of
// memory freed moments before. Options set in ASAN_OPTIONS still win.
extern "C" const char* __asan_default_options();   // NOLINT(readability-identifier-naming)
extern "C" const char* __asan_default_options() {  // NOLINT(readability-identifier-naming)
  return "quarantine_size_mb=8";
}
