#include "scheduler/decode_budget.h"

#include <algorithm>
#include <utility>

namespace vgpu::scheduler {

DecodeBudget::Lease::Lease(Lease&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)), values_(std::exchange(other.values_, 0)) {}

DecodeBudget::Lease& DecodeBudget::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (budget_ != nullptr) budget_->Give(values_);
    budget_ = std::exchange(other.budget_, nullptr);
    values_ = std::exchange(other.values_, 0);
  }
  return *this;
}

DecodeBudget::Lease::~Lease() {
  if (budget_ != nullptr) budget_->Give(values_);
}

DecodeBudget::DecodeBudget(DecodeBudgetOptions options) : options_(options) {
  large_limit_ =
      options_.capacity > options_.kept_for_small ? options_.capacity - options_.kept_for_small : 0;
  // Options that leave large documents no more than a small one: nothing is kept aside then.
  if (large_limit_ <= options_.small) large_limit_ = options_.capacity;
}

size_t DecodeBudget::LimitFor(size_t values) const {
  return values <= options_.small ? options_.capacity : large_limit_;
}

bool DecodeBudget::Take(size_t values, Lease& lease) {
  const bool large = values > options_.small;
  // A document larger than its share could never be granted: it takes the whole share, and so
  // goes alone among the large ones.
  values = std::min(values, LimitFor(values));
  const size_t limit = LimitFor(values);
  std::unique_lock lock(mu_);
  const auto room = [&] { return in_use_ + values <= limit; };
  // A large one waits for nothing: waiting would hold the handler's thread, and enough of them
  // waiting at once would keep ordinary requests from a thread.
  if (large ? !room() : !freed_.wait_for(lock, options_.wait, room)) return false;
  in_use_ += values;
  peak_ = std::max(peak_, in_use_);
  lock.unlock();
  lease = Lease(this, values);
  return true;
}

void DecodeBudget::Give(size_t values) {
  {
    std::lock_guard lock(mu_);
    in_use_ -= values;
  }
  freed_.notify_all();
}

size_t DecodeBudget::in_use() const {
  std::lock_guard lock(mu_);
  return in_use_;
}

size_t DecodeBudget::peak() const {
  std::lock_guard lock(mu_);
  return peak_;
}

}  // namespace vgpu::scheduler
