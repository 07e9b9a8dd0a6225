// The time-slicing rules of a simulated GPU (gpu_scheduler.h) with exact times: the layout lives
// in this process's memory and the test chooses every instant, so nothing depends on the host.

#include "gpu_scheduler.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

namespace vgpu::fake {
namespace {

constexpr int64_t kUs = 1'000;
constexpr int64_t kMs = 1'000'000;
constexpr int kDev = 0;

struct FreeLayout {
  void operator()(SharedLayout* p) const { std::free(p); }
};

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override { Reset(2 * kMs, 0); }

  void Reset(int64_t timeslice_ns, int64_t switch_ns) {
    // calloc: the layout is large but sparse, untouched pages cost nothing.
    s_.reset(static_cast<SharedLayout*>(std::calloc(1, sizeof(SharedLayout))));
    ASSERT_NE(s_, nullptr);
    s_->timeslice_ns = timeslice_ns;
    s_->switch_ns = switch_ns;
    for (auto& d : s_->devices) {
      d.sched.current = -1;
      d.sched.last = -1;
    }
  }

  // A context of (simulated) process `pid`, which gets process slot pid - 100.
  int Open(int pid, int ordinal = 0) {
    ProcessSlot& p = s_->processes[pid - 100];
    p.pid = pid;
    p.start_time = 7;
    ContextOwner owner;
    owner.pid = pid;
    owner.start_time = 7;
    owner.process = pid - 100;
    owner.ordinal = ordinal;
    owner.context_id = static_cast<uint32_t>(pid);
    const int slot = OpenContextSlot(*s_, kDev, owner);
    EXPECT_GE(slot, 0);
    return slot;
  }

  // Advances to `at` and queues a kernel of `duration` there.
  void Submit(int slot, int64_t at, int64_t duration, uint32_t stream = 1) {
    AdvanceGpu(*s_, kDev, at);
    KernelLaunch k;
    k.duration_ns = duration;
    k.stream_id = stream;
    k.correlation_id = ++correlation_;
    ASSERT_TRUE(SubmitKernel(*s_, slot, k, nullptr));
  }

  std::vector<KernelRecord> Records() const {
    std::vector<KernelRecord> out;
    const auto& d = s_->devices[kDev];
    for (uint64_t seq = 1; seq <= d.record_seq; ++seq)
      out.push_back(d.records[(seq - 1) % kRecordRing]);
    return out;
  }
  const KernelRecord& RecordOf(uint32_t correlation_id) const {
    const auto& d = s_->devices[kDev];
    for (uint64_t seq = 1; seq <= d.record_seq; ++seq) {
      const auto& r = d.records[(seq - 1) % kRecordRing];
      if (r.correlation_id == correlation_id) return r;
    }
    ADD_FAILURE() << "no record of kernel " << correlation_id;
    static const KernelRecord none{};
    return none;
  }
  uint64_t GpuNs(int pid) const { return s_->processes[pid - 100].gpu_ns[kDev]; }

  std::unique_ptr<SharedLayout, FreeLayout> s_;
  uint32_t correlation_ = 0;
};

TEST_F(SchedulerTest, LoneContextRunsItsKernelsBackToBack) {
  const int a = Open(100);
  Submit(a, 0, 1 * kMs);
  Submit(a, 0, 2 * kMs, 2);
  Submit(a, 0, 3 * kMs);
  AdvanceGpu(*s_, kDev, 100 * kMs);
  const auto r = Records();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].start_ns, 0);
  EXPECT_EQ(r[0].end_ns, 1 * kMs);
  EXPECT_EQ(r[1].start_ns, 1 * kMs);
  EXPECT_EQ(r[1].end_ns, 3 * kMs);  // slices renew while nobody else waits
  EXPECT_EQ(r[1].stream_id, 2u);
  EXPECT_EQ(r[2].end_ns, 6 * kMs);
  EXPECT_EQ(r[2].service_ns, 3 * kMs);
  EXPECT_EQ(r[2].process_done, 3u);
  EXPECT_EQ(r[2].pid, 100);
  EXPECT_EQ(GpuNs(100), static_cast<uint64_t>(6 * kMs));
  // One merged service period for the utilization queries.
  const auto& d = s_->devices[kDev];
  ASSERT_EQ(d.service_count, 1u);
  EXPECT_EQ(d.service[0].start_ns, 0);
  EXPECT_EQ(d.service[0].end_ns, 6 * kMs);
  EXPECT_EQ(PendingKernels(s_->contexts[a]), 0u);
}

TEST_F(SchedulerTest, TwoBusyContextsAlternateInSlicesAndPreemptedKernelsStretch) {
  const int a = Open(100);
  const int b = Open(101);
  Submit(a, 0, 10 * kMs);
  Submit(b, 0, 10 * kMs);
  AdvanceGpu(*s_, kDev, 100 * kMs);
  // A 0-2, B 2-4, A 4-6, ... A's fifth slice ends at 18, B's at 20.
  EXPECT_EQ(RecordOf(1).start_ns, 0);
  EXPECT_EQ(RecordOf(1).end_ns, 18 * kMs);
  EXPECT_EQ(RecordOf(1).service_ns, 10 * kMs);
  EXPECT_EQ(RecordOf(2).start_ns, 2 * kMs);
  EXPECT_EQ(RecordOf(2).end_ns, 20 * kMs);
  EXPECT_EQ(RecordOf(2).service_ns, 10 * kMs);
  EXPECT_EQ(GpuNs(100), static_cast<uint64_t>(10 * kMs));
  EXPECT_EQ(GpuNs(101), static_cast<uint64_t>(10 * kMs));
  EXPECT_EQ(s_->devices[kDev].service_count, 10u);  // ten slices, none merged
}

TEST_F(SchedulerTest, AContextWithAnEmptyQueueYieldsAtOnce) {
  const int a = Open(100);
  const int b = Open(101);
  Submit(a, 0, 1 * kMs);
  Submit(b, 500 * kUs, 1 * kMs);
  AdvanceGpu(*s_, kDev, 10 * kMs);
  EXPECT_EQ(RecordOf(1).end_ns, 1 * kMs);
  EXPECT_EQ(RecordOf(2).start_ns, 1 * kMs);  // not at the end of A's slice (2 ms)
  EXPECT_EQ(RecordOf(2).end_ns, 2 * kMs);
  // And a kernel submitted to an idle GPU starts as it is submitted.
  Submit(a, 20 * kMs, 1 * kMs);
  AdvanceGpu(*s_, kDev, 30 * kMs);
  EXPECT_EQ(RecordOf(3).start_ns, 20 * kMs);
}

TEST_F(SchedulerTest, ARunningContextKeepsTheGpuUntilItsSliceEnds) {
  const int a = Open(100);
  const int b = Open(101);
  Submit(a, 0, 10 * kMs);
  Submit(b, 5 * kMs, 1 * kMs);  // A alone renewed its slice at 2 and 4: B waits until 6
  AdvanceGpu(*s_, kDev, 100 * kMs);
  EXPECT_EQ(RecordOf(2).start_ns, 6 * kMs);
  EXPECT_EQ(RecordOf(2).end_ns, 7 * kMs);
  EXPECT_EQ(RecordOf(1).start_ns, 0);
  EXPECT_EQ(RecordOf(1).end_ns, 11 * kMs);  // 6 ms before B, 4 ms after
  EXPECT_EQ(RecordOf(1).service_ns, 10 * kMs);
}

TEST_F(SchedulerTest, ThreeContextsRoundRobin) {
  const int a = Open(100);
  const int b = Open(101);
  const int c = Open(102);
  Submit(a, 0, 4 * kMs);
  Submit(b, 0, 4 * kMs);
  Submit(c, 0, 4 * kMs);
  AdvanceGpu(*s_, kDev, 100 * kMs);
  // A 0-2, B 2-4, C 4-6, A 6-8, B 8-10, C 10-12.
  EXPECT_EQ(RecordOf(1).end_ns, 8 * kMs);
  EXPECT_EQ(RecordOf(2).start_ns, 2 * kMs);
  EXPECT_EQ(RecordOf(2).end_ns, 10 * kMs);
  EXPECT_EQ(RecordOf(3).start_ns, 4 * kMs);
  EXPECT_EQ(RecordOf(3).end_ns, 12 * kMs);
  const auto& d = s_->devices[kDev];
  const int pids[] = {100, 101, 102, 100, 101, 102};
  ASSERT_EQ(d.service_count, 6u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(d.service[i].pid, pids[i]) << i;
    EXPECT_EQ(d.service[i].start_ns, 2 * kMs * i) << i;
  }
}

TEST_F(SchedulerTest, KernelsOfOneContextRunInSubmissionOrderAcrossStreams) {
  const int a = Open(100);
  const int b = Open(101);
  Submit(a, 0, 3 * kMs, 1);
  Submit(a, 0, 1 * kMs, 2);
  Submit(b, 0, 1 * kMs, 9);
  AdvanceGpu(*s_, kDev, 100 * kMs);
  // A's first kernel (stream 1) is preempted at 2; A's second (stream 2) waits for it.
  EXPECT_EQ(RecordOf(3).start_ns, 2 * kMs);
  EXPECT_EQ(RecordOf(1).end_ns, 4 * kMs);
  EXPECT_EQ(RecordOf(2).start_ns, 4 * kMs);
  EXPECT_EQ(RecordOf(2).end_ns, 5 * kMs);
}

TEST_F(SchedulerTest, SwitchCostIsNobodysService) {
  Reset(2 * kMs, 100 * kUs);
  const int a = Open(100);
  const int b = Open(101);
  Submit(a, 0, 1 * kMs);  // the first context on the GPU switches from nothing: no cost
  Submit(b, 0, 1 * kMs);
  AdvanceGpu(*s_, kDev, 10 * kMs);
  EXPECT_EQ(RecordOf(1).start_ns, 0);
  EXPECT_EQ(RecordOf(2).start_ns, 1100 * kUs);
  EXPECT_EQ(RecordOf(2).end_ns, 2100 * kUs);
  Submit(b, 20 * kMs, 1 * kMs);  // B ran last: no switch
  Submit(a, 20 * kMs, 1 * kMs);  // but back to A costs one
  AdvanceGpu(*s_, kDev, 30 * kMs);
  EXPECT_EQ(RecordOf(3).start_ns, 20 * kMs);
  EXPECT_EQ(RecordOf(4).start_ns, 21100 * kUs);
  EXPECT_EQ(GpuNs(100) + GpuNs(101), static_cast<uint64_t>(4 * kMs));
}

TEST_F(SchedulerTest, SaturatingContextsShareTheGpuEqually) {
  const int a = Open(100);
  const int b = Open(101);
  for (int i = 0; i < 1000; ++i) {
    Submit(a, 0, 300 * kUs);
    Submit(b, 0, 700 * kUs);
  }
  AdvanceGpu(*s_, kDev, 400 * kMs);
  // Kernels cut at slice ends: each context gets its 2 ms per round whatever its kernels.
  EXPECT_EQ(GpuNs(100), static_cast<uint64_t>(200 * kMs));
  EXPECT_EQ(GpuNs(101), static_cast<uint64_t>(200 * kMs));
}

TEST_F(SchedulerTest, LazyStepsGiveTheSameTimelineAsOneStep) {
  // The same submissions, simulated once in one step per submission and once in random small
  // steps: the records must be identical.
  auto run = [&](unsigned seed, bool small_steps) {
    Reset(2 * kMs, 30 * kUs);
    correlation_ = 0;
    const int slots[] = {Open(100), Open(101), Open(102)};
    std::mt19937 rng(7);  // the submissions: same in both runs
    std::mt19937 steps(seed);
    int64_t t = 0;
    for (int i = 0; i < 300; ++i) {
      const int64_t next = t + static_cast<int64_t>(rng() % 400) * kUs;
      if (small_steps) {
        while (t < next) {
          t = std::min(next, t + static_cast<int64_t>(steps() % 300) * kUs + 1);
          AdvanceGpu(*s_, kDev, t);
        }
      }
      t = next;
      Submit(slots[rng() % 3], t, static_cast<int64_t>(rng() % 3000) * kUs);
    }
    AdvanceGpu(*s_, kDev, t + 2000 * kMs);
    return Records();
  };
  const auto one = run(1, false);
  const auto many = run(2, true);
  ASSERT_EQ(one.size(), 300u);
  ASSERT_EQ(many.size(), one.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(many[i].correlation_id, one[i].correlation_id) << i;
    EXPECT_EQ(many[i].start_ns, one[i].start_ns) << i;
    EXPECT_EQ(many[i].end_ns, one[i].end_ns) << i;
    EXPECT_EQ(many[i].service_ns, one[i].service_ns) << i;
  }
}

TEST_F(SchedulerTest, AFullQueueRefusesUntilAKernelCompletes) {
  const int a = Open(100);
  for (int i = 0; i < kContextQueue; ++i) Submit(a, 0, 1 * kMs);
  KernelLaunch k;
  k.duration_ns = 1 * kMs;
  PendingKernel evicted{};
  EXPECT_FALSE(SubmitKernel(*s_, a, k, &evicted));
  AdvanceGpu(*s_, kDev, 1 * kMs);
  ASSERT_TRUE(SubmitKernel(*s_, a, k, &evicted));
  // The new kernel took the entry of the first, completed one: its end is handed over.
  EXPECT_EQ(evicted.seq, 1u);
  EXPECT_EQ(evicted.end_ns, 1 * kMs);
  EXPECT_EQ(s_->contexts[a].submitted, static_cast<uint64_t>(kContextQueue + 1));
}

TEST_F(SchedulerTest, ProgressGivesTheEndOrAnEarliestEnd) {
  const int a = Open(100);
  Submit(a, 0, 3 * kMs);
  Submit(a, 0, 2 * kMs);
  AdvanceGpu(*s_, kDev, 1 * kMs);
  KernelProgress p = ProgressOf(*s_, a, 2);
  EXPECT_FALSE(p.done);
  EXPECT_EQ(p.earliest_end_ns, 5 * kMs);
  AdvanceGpu(*s_, kDev, 5 * kMs);
  p = ProgressOf(*s_, a, 2);
  EXPECT_TRUE(p.done);
  EXPECT_EQ(p.end_ns, 5 * kMs);
  EXPECT_TRUE(ProgressOf(*s_, a, 0).done);
}

TEST_F(SchedulerTest, ClosedContextDrainsDroppedContextFreesTheGpuAtOnce) {
  const int a = Open(100);
  const int b = Open(101);
  Submit(a, 0, 3 * kMs);
  CloseContextSlot(*s_, a);  // its kernel still runs
  EXPECT_NE(s_->contexts[a].uid, 0u);
  AdvanceGpu(*s_, kDev, 5 * kMs);
  EXPECT_EQ(RecordOf(1).end_ns, 3 * kMs);
  EXPECT_EQ(s_->contexts[a].uid, 0u);  // drained: freed

  const int c = Open(102);
  Submit(c, 10 * kMs, 1000 * kMs);
  Submit(b, 10 * kMs, 1 * kMs);
  AdvanceGpu(*s_, kDev, 11 * kMs);
  DropContextSlot(*s_, c);  // its owner died: the rest of its kernel never runs
  AdvanceGpu(*s_, kDev, 20 * kMs);
  EXPECT_EQ(RecordOf(3).start_ns, 11 * kMs);
  EXPECT_EQ(RecordOf(3).end_ns, 12 * kMs);
  EXPECT_EQ(GpuNs(102), static_cast<uint64_t>(1 * kMs));
  EXPECT_EQ(s_->devices[kDev].record_seq, 2u);  // no record for the dropped kernel
}

}  // namespace
}  // namespace vgpu::fake
