#include "attribution.h"

#include <stdlib.h>

namespace vgpu::sm {
namespace {

int CompareEdges(const void* a, const void* b) {
  const auto* x = static_cast<const SpanEdge*>(a);
  const auto* y = static_cast<const SpanEdge*>(b);
  if (x->time != y->time) return x->time < y->time ? -1 : 1;
  return x->opens - y->opens;  // ends first: spans that only touch do not overlap
}

// The spans of one owner that cover the current instant: their count and shortest duration.
// Few spans of one owner overlap (one per busy stream); beyond kTracked the count stays right and
// the minimum keeps the shortest seen, which only errs towards "ours".
struct Covering {
  static constexpr int kTracked = 8;
  int count;
  int tracked;
  int64_t durations[kTracked];

  void Open(int64_t d) {
    ++count;
    if (tracked < kTracked) durations[tracked++] = d;
  }
  void Close(int64_t d) {
    --count;
    for (int i = 0; i < tracked; ++i) {
      if (durations[i] == d) {
        durations[i] = durations[--tracked];
        break;
      }
    }
    if (count == 0) tracked = 0;
  }
  int64_t Shortest() const {
    int64_t best = INT64_MAX;
    for (int i = 0; i < tracked; ++i) best = durations[i] < best ? durations[i] : best;
    return best;
  }
};

int OwnerIndex(int32_t owner) {
  return owner == kSelf ? 0 : owner + 1;
}

}  // namespace

Attribution Attribute(const TimeSpan* mine, int n_mine, const OwnedSpan* others, int n_others,
                      int64_t from, int64_t to, SpanEdge* scratch, int scratch_capacity) {
  Attribution result{0, 0, 0};
  int n = 0;
  auto add = [&](int64_t start, int64_t end, int32_t owner) {
    if (OwnerIndex(owner) < 0 || OwnerIndex(owner) >= kMaxOwners) return;
    const int64_t duration = end - start;
    if (start < from) start = from;
    if (end > to) end = to;
    if (end <= start || n + 2 > scratch_capacity) return;
    scratch[n++] = SpanEdge{start, duration, owner, 1};
    scratch[n++] = SpanEdge{end, duration, owner, 0};
  };
  for (int i = 0; i < n_mine; ++i) add(mine[i].start, mine[i].end, kSelf);
  if (n == 0) return result;
  for (int i = 0; i < n_others; ++i) add(others[i].start, others[i].end, others[i].owner);
  qsort(scratch, static_cast<size_t>(n), sizeof(SpanEdge), CompareEdges);

  Covering covering[kMaxOwners] = {};
  int active_owners = 0;  // owners with at least one span covering the instant
  int64_t last = scratch[0].time;
  for (int i = 0; i < n; ++i) {
    const SpanEdge& e = scratch[i];
    const int64_t segment = e.time - last;
    if (segment > 0 && covering[0].count > 0) {
      result.busy_ns += segment;
      if (active_owners == 1) {
        result.ours_ns += segment;
      } else {
        result.shared_ns += segment;
        int64_t best = INT64_MAX;
        for (const Covering& c : covering) {
          if (c.count > 0 && c.Shortest() < best) best = c.Shortest();
        }
        // Within 1/16 of the shortest counts as a tie.
        const int64_t tie = best + best / 16;
        int winners = 0;
        for (const Covering& c : covering) winners += c.count > 0 && c.Shortest() <= tie;
        if (covering[0].Shortest() <= tie && winners > 0) result.ours_ns += segment / winners;
      }
    }
    last = e.time;
    Covering& c = covering[OwnerIndex(e.owner)];
    if (e.opens != 0) {
      if (c.count == 0) ++active_owners;
      c.Open(e.duration);
    } else {
      c.Close(e.duration);
      if (c.count == 0) --active_owners;
    }
  }
  return result;
}

}  // namespace vgpu::sm
