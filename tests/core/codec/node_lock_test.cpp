#include "core/codec/node_lock.h"

#include <gtest/gtest.h>

namespace vgpu::codec {
namespace {

using std::chrono::sys_days;
using namespace std::chrono_literals;

Seconds At(int y, unsigned mo, unsigned d, int h, int mi, int s) {
  return Seconds{sys_days{std::chrono::year(y) / std::chrono::month(mo) / std::chrono::day(d)}} +
         std::chrono::hours(h) + std::chrono::minutes(mi) + std::chrono::seconds(s);
}

TEST(TimeFormatTest, Rfc3339Table) {
  struct Case {
    const char* text;
    Seconds want;
  };
  const Case cases[] = {
      {"2024-05-01T10:20:30Z", At(2024, 5, 1, 10, 20, 30)},
      {"2024-05-01T10:20:30.123456Z", At(2024, 5, 1, 10, 20, 30)},
      {"2024-05-01T18:20:30+08:00", At(2024, 5, 1, 10, 20, 30)},
      {"2024-05-01T05:50:30-04:30", At(2024, 5, 1, 10, 20, 30)},
      {"2024-02-29T00:00:00Z", At(2024, 2, 29, 0, 0, 0)},
  };
  for (const auto& c : cases) {
    auto t = ParseRfc3339(c.text);
    ASSERT_TRUE(t.ok()) << c.text << ": " << t.status().ToString();
    EXPECT_EQ(*t, c.want) << c.text;
  }
  for (const char* bad :
       {"", "2024-05-01 10:20:30Z", "2024-05-01T10:20:30", "2023-02-29T00:00:00Z",
        "2024-05-01T25:00:00Z", "2024-05-01T10:20:30+8", "x024-05-01T10:20:30Z",
        // Past what FormatRfc3339 writes back (found by fuzz_handshake: a node lock that did not
        // survive its round trip).
        "9999-12-31T23:59:59-00:01", "9999-12-31T23:59:60Z", "0000-01-01T00:00:00+00:01"}) {
    EXPECT_FALSE(ParseRfc3339(bad).ok()) << bad;
  }
  EXPECT_EQ(FormatRfc3339(At(2024, 5, 1, 9, 8, 7)), "2024-05-01T09:08:07Z");
}

TEST(NodeLockTest, EncodeDecode) {
  NodeLock lock{At(2024, 5, 1, 10, 20, 30), "default", "pod-1"};
  EXPECT_EQ(EncodeNodeLock(lock), "2024-05-01T10:20:30Z,default,pod-1");
  EXPECT_EQ(*DecodeNodeLock("2024-05-01T10:20:30Z,default,pod-1"), lock);
  auto legacy = DecodeNodeLock("2024-05-01T18:20:30+08:00");
  ASSERT_TRUE(legacy.ok());
  EXPECT_FALSE(legacy->has_owner());
  EXPECT_EQ(legacy->time, lock.time);
  EXPECT_EQ(EncodeNodeLock(*legacy), "2024-05-01T10:20:30Z");
  for (const char* bad : {"", "yesterday,ns,pod", "2024-05-01T10:20:30Z,ns",
                          "2024-05-01T10:20:30Z,,pod", "2024-05-01T10:20:30Z,a,b,c"}) {
    auto r = DecodeNodeLock(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("node lock"), std::string::npos);
  }
}

TEST(HandshakeTest, Table) {
  Seconds t = At(2024, 5, 1, 10, 20, 30);
  struct Case {
    const char* text;
    HandshakeState state;
  };
  const Case cases[] = {
      {"Requesting_2024-05-01 10:20:30", HandshakeState::kRequesting},
      {"Requesting_2024.05.01 10:20:30", HandshakeState::kRequesting},
      {"Deleted_2024-05-01 10:20:30", HandshakeState::kDeleted},
      {"Reported 2024-05-01 10:20:30.532137 +0000 UTC m=+12.3", HandshakeState::kReported},
      {"Reported_2024-05-01 10:20:30", HandshakeState::kReported},
  };
  for (const auto& c : cases) {
    auto h = DecodeHandshake(c.text);
    ASSERT_TRUE(h.ok()) << c.text << ": " << h.status().ToString();
    EXPECT_EQ(h->state, c.state) << c.text;
    EXPECT_EQ(h->time, t) << c.text;
  }
  EXPECT_EQ(EncodeHandshake({HandshakeState::kRequesting, t}), "Requesting_2024-05-01 10:20:30");
  EXPECT_EQ(EncodeHandshake({HandshakeState::kDeleted, t}), "Deleted_2024-05-01 10:20:30");
  for (auto s :
       {HandshakeState::kRequesting, HandshakeState::kReported, HandshakeState::kDeleted}) {
    EXPECT_EQ(*DecodeHandshake(EncodeHandshake({s, t})), (Handshake{s, t}));
  }
  for (const char* bad : {"", "Requesting", "Requesting_now", "Asking_2024-05-01 10:20:30",
                          "Requesting_2024-05-01T10:20:30"}) {
    EXPECT_FALSE(DecodeHandshake(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace vgpu::codec
