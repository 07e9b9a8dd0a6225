#include "net/peer_address.h"

#include <gtest/gtest.h>

namespace vgpu::net {
namespace {

TEST(PeerAddress, LoopbackOrNot) {
  const struct {
    const char* address;
    bool loopback;
  } cases[] = {
      {"127.0.0.1", true},
      {"127.1.2.3", true},  // all of 127.0.0.0/8
      {"::1", true},
      {"::ffff:127.0.0.1", true},  // an IPv4 peer of a dual-stack listener
      {"0:0:0:0:0:0:0:1", true},
      {"10.244.1.7", false},  // a pod IP
      {"192.168.0.127", false},
      {"128.0.0.1", false},
      {"0.0.0.0", false},
      {"::", false},
      {"::ffff:10.0.0.1", false},
      {"fe80::1", false},
      {"::2", false},
      {"", false},
      {"localhost", false},  // httplib reports numbers; a name is not trusted
      {"127.0.0.1:8888", false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(IsLoopbackAddress(c.address), c.loopback) << c.address;
  }
}

}  // namespace
}  // namespace vgpu::net
