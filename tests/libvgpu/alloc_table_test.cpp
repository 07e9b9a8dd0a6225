#include "alloc_table.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>

namespace {

struct Table {
  vgpu_alloc_table t{};
  ~Table() { std::free(t.slots); }
};

TEST(AllocTable, PutTakeExactlyOnce) {
  Table tab;
  uint64_t old_size = 0;
  int old_dev = -1;
  ASSERT_EQ(vgpu_alloc_put(&tab.t, VGPU_ALLOC_LINEAR, 0x1000, 4096, 0, &old_size, &old_dev), 0);
  // same key, other kind: a separate entry
  ASSERT_EQ(vgpu_alloc_put(&tab.t, VGPU_ALLOC_HANDLE, 0x1000, 8192, 1, &old_size, &old_dev), 0);
  uint64_t size = 0;
  int dev = -1;
  EXPECT_EQ(vgpu_alloc_take(&tab.t, VGPU_ALLOC_LINEAR, 0x1000, &size, &dev), 1);
  EXPECT_EQ(size, 4096u);
  EXPECT_EQ(dev, 0);
  EXPECT_EQ(vgpu_alloc_take(&tab.t, VGPU_ALLOC_LINEAR, 0x1000, &size, &dev), 0);
  EXPECT_EQ(vgpu_alloc_take(&tab.t, VGPU_ALLOC_HANDLE, 0x1000, &size, &dev), 1);
  EXPECT_EQ(size, 8192u);
  EXPECT_EQ(dev, 1);
  EXPECT_EQ(vgpu_alloc_take(&tab.t, VGPU_ALLOC_ARRAY, 0x9999, &size, &dev), 0);
}

TEST(AllocTable, ReusedAddressReportsTheReplacedEntry) {
  Table tab;
  uint64_t old_size = 0;
  int old_dev = -1;
  ASSERT_EQ(vgpu_alloc_put(&tab.t, VGPU_ALLOC_LINEAR, 0x2000, 100, 0, &old_size, &old_dev), 0);
  ASSERT_EQ(vgpu_alloc_put(&tab.t, VGPU_ALLOC_LINEAR, 0x2000, 300, 1, &old_size, &old_dev), 1);
  EXPECT_EQ(old_size, 100u);
  EXPECT_EQ(old_dev, 0);
  uint64_t size = 0;
  int dev = -1;
  ASSERT_EQ(vgpu_alloc_take(&tab.t, VGPU_ALLOC_LINEAR, 0x2000, &size, &dev), 1);
  EXPECT_EQ(size, 300u);
  EXPECT_EQ(dev, 1);
}

TEST(AllocTable, ZeroKeyRejected) {
  Table tab;
  uint64_t old_size = 0;
  int old_dev = -1;
  EXPECT_EQ(vgpu_alloc_put(&tab.t, VGPU_ALLOC_LINEAR, 0, 1, 0, &old_size, &old_dev), -1);
}

TEST(AllocTable, RandomisedAgainstMap) {
  Table tab;
  std::map<uint64_t, uint64_t> model;
  std::mt19937_64 rng(42);
  for (int i = 0; i < 20000; ++i) {
    const uint64_t key = (rng() % 3000 + 1) * 256;
    if (rng() % 2 == 0) {
      const uint64_t size = rng() % 100000 + 1;
      uint64_t old_size = 0;
      int old_dev = -1;
      const int rc =
          vgpu_alloc_put(&tab.t, VGPU_ALLOC_LINEAR, key, size, int(key % 3), &old_size, &old_dev);
      ASSERT_EQ(rc, model.count(key) ? 1 : 0);
      if (rc == 1) {
        EXPECT_EQ(old_size, model[key]);
      }
      model[key] = size;
    } else {
      uint64_t size = 0;
      int dev = -1;
      const int found = vgpu_alloc_take(&tab.t, VGPU_ALLOC_LINEAR, key, &size, &dev);
      auto it = model.find(key);
      ASSERT_EQ(found, it != model.end() ? 1 : 0);
      if (found) {
        EXPECT_EQ(size, it->second);
        EXPECT_EQ(dev, int(key % 3));
        model.erase(it);
      }
    }
  }
  for (int d = 0; d < 3; ++d) {
    uint64_t want = 0;
    for (const auto& [k, v] : model) {
      if (int(k % 3) == d) want += v;
    }
    EXPECT_EQ(vgpu_alloc_sum(&tab.t, d), want);
  }
  EXPECT_EQ(tab.t.live, model.size());
  vgpu_alloc_reset(&tab.t);
  EXPECT_EQ(vgpu_alloc_sum(&tab.t, 0), 0u);
}

}  // namespace
