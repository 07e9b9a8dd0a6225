#include "monitor/mapping_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace vgpu::monitor {
namespace {

// Lock-free for the handler: a slot is published by storing its size, then its begin; a chunk of
// slots by storing its pointer. Chunks are added as mappings grow and never freed, so the table
// has no size a node's containers could fill (each container maps at most kMaxRegionFiles
// regions: core/monitor/container_folder.h).
constexpr int kChunkSlots = 1024;
constexpr int kMaxChunks = 256;  // 262,144 mappings
struct Slot {
  std::atomic<uintptr_t> begin{0};
  std::atomic<size_t> size{0};
};
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables): signal state
std::atomic<Slot*> g_chunks[kMaxChunks];

void OnBus(int sig, siginfo_t* info, void* /*context*/) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (std::atomic<Slot*>& chunk : g_chunks) {
    Slot* slots = chunk.load(std::memory_order_acquire);
    if (slots == nullptr) break;
    for (int i = 0; i < kChunkSlots; ++i) {
      Slot& s = slots[i];
      const uintptr_t begin = s.begin.load(std::memory_order_acquire);
      if (begin == 0 || addr < begin || addr >= begin + s.size.load(std::memory_order_relaxed)) {
        continue;
      }
      const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
      void* at = static_cast<char*>(info->si_addr) - (addr & (page - 1));
      if (mmap(at, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
          MAP_FAILED) {
        return;  // the faulting access runs again and reads zeros
      }
      // Not ours (or the page could not be replaced): the default action, at the same
      // instruction.
      (void)signal(sig, SIG_DFL);
      return;
    }
  }
  (void)signal(sig, SIG_DFL);
}

void InstallHandler() {
  struct sigaction sa {};
  sa.sa_sigaction = OnBus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  (void)sigaction(SIGBUS, &sa, nullptr);
}

}  // namespace

bool GuardMapping(void* begin, size_t size) {
  static std::once_flag installed;
  std::call_once(installed, InstallHandler);
  static std::mutex mu;  // registrations among themselves; the handler only reads
  const std::lock_guard lock(mu);
  for (std::atomic<Slot*>& chunk : g_chunks) {
    Slot* slots = chunk.load(std::memory_order_relaxed);
    if (slots == nullptr) {
      slots = new Slot[kChunkSlots];  // NOLINT(cppcoreguidelines-owning-memory): never freed
      chunk.store(slots, std::memory_order_release);
    }
    for (int i = 0; i < kChunkSlots; ++i) {
      Slot& s = slots[i];
      if (s.begin.load(std::memory_order_relaxed) != 0) continue;
      s.size.store(size, std::memory_order_relaxed);
      s.begin.store(reinterpret_cast<uintptr_t>(begin), std::memory_order_release);
      return true;
    }
  }
  return false;
}

void UnguardMapping(void* begin) {
  const auto b = reinterpret_cast<uintptr_t>(begin);
  for (std::atomic<Slot*>& chunk : g_chunks) {
    Slot* slots = chunk.load(std::memory_order_acquire);
    if (slots == nullptr) return;
    for (int i = 0; i < kChunkSlots; ++i) {
      uintptr_t expected = b;
      if (slots[i].begin.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) return;
    }
  }
}

}  // namespace vgpu::monitor
