#include "proc_table.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace {

constexpr uint64_t kPerThread = 2;  // CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

struct Case {
  const char* symbol;
  int version;
  uint64_t flags;
  int want_version;  // 0 = none
  int want_per_thread;
};

// Versions come from the CUDA 13 headers (cudaTypedefs.h), parsed by the generator.
TEST(ProcTable, PicksTheAbiTheDriverWould) {
  const Case cases[] = {
      {"cuCtxCreate", 13000, 0, 12050, 0},
      {"cuCtxCreate", 12040, 0, 11040, 0},
      {"cuCtxCreate", 11000, 0, 3020, 0},
      {"cuCtxCreate", 3000, 0, 2000, 0},
      {"cuMemAdvise", 12000, 0, 8000, 0},
      {"cuMemAdvise", 12020, 0, 12020, 0},
      {"cuMemPrefetchAsync", 12000, 0, 8000, 0},
      {"cuMemPrefetchAsync", 13000, 0, 12020, 0},
      {"cuMemPrefetchAsync", 13000, kPerThread, 12020, 1},
      {"cuLaunchKernel", 12000, 0, 4000, 0},
      {"cuLaunchKernel", 12000, kPerThread, 7000, 1},
      {"cuLaunchKernel", 6000, kPerThread, 4000, 0},  // no per-thread ABI that old
      {"cuMemAlloc", 12000, 0, 3020, 0},
      {"cuMemAlloc", 3010, 0, 2000, 0},
      {"cuMemAlloc", 12000, kPerThread, 3020, 0},  // no _ptsz variant: the plain one
      {"cuGetProcAddress", 12000, 0, 12000, 0},
      {"cuGetProcAddress", 11080, 0, 11030, 0},
      {"cuMemCreate", 10010, 0, 0, 0},  // older than the API
      {"cuNoSuchFunction", 13000, 0, 0, 0},
  };
  for (const auto& c : cases) {
    const vgpu_proc_entry* e =
        vgpu_proc_select(vgpu_proc_entries, vgpu_proc_entry_count, c.symbol, c.version, c.flags);
    const std::string what = std::string(c.symbol) + "@" + std::to_string(c.version);
    if (c.want_version == 0) {
      EXPECT_EQ(e, nullptr) << what;
      continue;
    }
    ASSERT_NE(e, nullptr) << what;
    EXPECT_STREQ(e->symbol, c.symbol) << what;
    EXPECT_EQ(e->version, c.want_version) << what;
    EXPECT_EQ(e->per_thread, c.want_per_thread) << what;
  }
}

TEST(ProcTable, GeneratedTableIsSortedAndLarge) {
  ASSERT_GT(vgpu_proc_entry_count, 500);
  for (int i = 1; i < vgpu_proc_entry_count; ++i) {
    const int cmp = std::strcmp(vgpu_proc_entries[i - 1].symbol, vgpu_proc_entries[i].symbol);
    ASSERT_LE(cmp, 0) << vgpu_proc_entries[i].symbol;
    if (cmp == 0) {
      ASSERT_LE(vgpu_proc_entries[i - 1].version, vgpu_proc_entries[i].version);
    }
  }
}

TEST(ProcTable, NullSymbol) {
  EXPECT_EQ(vgpu_proc_select(vgpu_proc_entries, vgpu_proc_entry_count, nullptr, 13000, 0), nullptr);
}

}  // namespace
