#pragma once

// How much JSON the scheduler's request handlers may hold decoded at once, across its listeners.
//
// One document is bounded (codec::kKubeObjectJson); this bounds how many are alive together. A
// DOM costs 50 to 100 bytes a value, so a body of `[{},{},...]` builds some 25 times its size, and
// the scheduler runs 64 handlers at once (binds wait on node locks): 17 reviews of 7.5 MB each,
// within every per-client and per-listener body limit, built 3.3 GiB. Here a request takes, before
// decoding, the most values its body could hold (codec::MostJsonValues) and gives them back once
// answered; a request that cannot get them is not decoded (503, or a webhook denial: retry).
//
// Ordinary requests are small (a pod is a few thousand values; kube-scheduler sends node names):
// documents over `small` values may not take the last `kept_for_small`, so that large documents,
// however many, never keep ordinary requests waiting; and a large one that finds no room is
// refused at once rather than holding a handler's thread while it waits. A small one waits up to
// `wait` (for other small ones: 60 and more of them in flight at once).

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace vgpu::scheduler {

struct DecodeBudgetOptions {
  // 4 M values: 200 to 400 MB of DOM at most. One largest document (2.5 M values) at a time, and
  // room beside it for ordinary requests of every handler.
  size_t capacity = 4'000'000;
  size_t small = 65'536;              // a body up to 128 KiB
  size_t kept_for_small = 1'000'000;  // 64 handlers' worth of small documents, ~15 each
  std::chrono::milliseconds wait{2000};
};

class DecodeBudget {
 public:
  // Values held for one request; given back when it goes.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    size_t values() const { return values_; }

   private:
    friend class DecodeBudget;
    Lease(DecodeBudget* budget, size_t values) : budget_(budget), values_(values) {}
    DecodeBudget* budget_ = nullptr;
    size_t values_ = 0;
  };

  explicit DecodeBudget(DecodeBudgetOptions options = {});
  DecodeBudget(const DecodeBudget&) = delete;
  DecodeBudget& operator=(const DecodeBudget&) = delete;

  // `values` (capped at what one document may reach, so that it can always be granted once the
  // others are given back); false when there is no room (a small document: none within
  // options.wait).
  bool Take(size_t values, Lease& lease);

  size_t in_use() const;
  size_t peak() const;  // the most held at once since construction
  const DecodeBudgetOptions& options() const { return options_; }

 private:
  size_t LimitFor(size_t values) const;
  void Give(size_t values);

  DecodeBudgetOptions options_;
  size_t large_limit_ = 0;  // what documents over `small` may hold together
  mutable std::mutex mu_;
  std::condition_variable freed_;
  size_t in_use_ = 0;
  size_t peak_ = 0;
};

}  // namespace vgpu::scheduler
