// A GPU's peer file in the node-wide lock directory (libvgpu/src/sm/peer_file.cpp), as the SM
// limiter of one tenant reads it: every other tenant of the node can write any byte of it.
//
// Input: 8 bytes, `now` (little-endian), then bytes written over the file from its start (its
// header, the 64 slots' heads, the first slots' rings; at most 256 KiB), the rest of the file
// zeros. Properties: opening it never writes outside the file; whatever it holds, a scan counts at
// most the other 63 slots, the turn set's sums stay within 64 limits of at most 99, and every span
// handed to the attribution sweep is a real interval (start < end) no longer than
// kPeerMaxSpanNs, owned by a slot that exists; nothing faults or loops.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_check.h"
#include "peer_file.h"

namespace {

using vgpu::sm::kPeerMaxSpanNs;
using vgpu::sm::kPeerSlots;

const std::string& Dir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/vgpu-fuzz-peer.XXXXXX";
    const char* made = mkdtemp(tmpl);
    return std::string(made != nullptr ? made : "/tmp");
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int64_t now = 0;
  std::memcpy(&now, data, size < sizeof now ? size : sizeof now);
  const size_t at = size < sizeof now ? size : sizeof now;
  const size_t body = size - at > (256u << 10) ? (256u << 10) : size - at;
  const std::string path = Dir() + "/vgpu-gpu4-ab";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return 0;
  const bool ready = ftruncate(fd, sizeof(vgpu::sm::PeerFileLayout)) == 0 &&
                     pwrite(fd, data + at, body, 0) == static_cast<ssize_t>(body);
  close(fd);
  if (!ready) return 0;

  vgpu::sm::PeerFile peers;
  const char* why = nullptr;
  if (!peers.Open(Dir().c_str(), "ab", 1, &why)) return 0;  // another magic or version: refused
  const vgpu::sm::PeerScan scan = peers.Scan(now);
  vgpu::fuzz::Check(scan.active >= 0 && scan.active < kPeerSlots, "scan counts too many tenants");
  const vgpu::sm::TurnSet set = peers.Turns(now);
  vgpu::fuzz::Check(set.members >= 0 && set.members <= kPeerSlots, "too many turn members");
  vgpu::fuzz::Check(set.sum_percent >= 0 && set.sum_percent <= kPeerSlots * 99, "turn sum");
  vgpu::fuzz::Check(set.prefix_percent >= 0 && set.prefix_percent <= set.sum_percent,
                    "turn prefix");
  constexpr int kMax = 512;
  static vgpu::sm::OwnedSpan spans[kMax];
  const int n = peers.Collect(INT64_MIN, INT64_MAX, INT64_MIN, spans, kMax);
  vgpu::fuzz::Check(n >= 0 && n <= kMax, "collected past the buffer");
  for (int i = 0; i < n; ++i) {
    vgpu::fuzz::Check(spans[i].start < spans[i].end, "a span that is no interval");
    vgpu::fuzz::Check(static_cast<uint64_t>(spans[i].end) - static_cast<uint64_t>(spans[i].start) <=
                          static_cast<uint64_t>(kPeerMaxSpanNs),
                      "a span longer than any kernel");
    vgpu::fuzz::Check(spans[i].owner >= 0 && spans[i].owner < kPeerSlots, "a span of no slot");
  }
  const vgpu::sm::TimeSpan mine[] = {{now, now + 1}};
  peers.Publish(mine, 1);   // writes stay inside the slot the open claimed
  peers.ForgetAfterFork();  // closes the file
  return 0;
}
