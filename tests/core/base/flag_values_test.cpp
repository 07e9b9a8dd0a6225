// Go-spelled flag values the daemons take from HAMi's deployments: durations and listen
// addresses (core/base/go_duration.h, core/base/listen_address.h).
#include <gtest/gtest.h>

#include "core/base/go_duration.h"
#include "core/base/listen_address.h"

namespace vgpu {
namespace {

using std::chrono::nanoseconds;
using namespace std::chrono_literals;

TEST(FlagValues, GoDurations) {
  const struct {
    const char* text;
    nanoseconds want;
  } ok[] = {
      {"5m", 5min},    {"90s", 90s},        {"1h30m", 90min},
      {"1.5h", 90min}, {"300ms", 300ms},    {"0", 0ns},
      {"-1s", -1s},    {"+2s", 2s},         {"2h45m30.5s", 2h + 45min + 30500ms},
      {"1us", 1us},    {"1\xC2\xB5s", 1us}, {"1\xCE\xBCs", 1us},
      {"7ns", 7ns},    {".5s", 500ms},      {"1.s", 1s},
      {"0s", 0ns},
  };
  for (const auto& c : ok) {
    Result<nanoseconds> got = ParseGoDuration(c.text);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status().ToString();
    EXPECT_EQ(got->count(), c.want.count()) << c.text;
  }
  for (const char* bad :
       {"", "5", "m", "5x", ".", "+", "-", "5m3", "1e3s", "5 m", "99999999999h"}) {
    Result<nanoseconds> got = ParseGoDuration(bad);
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_NE(got.status().message().find("Go form"), std::string::npos) << got.status().message();
  }
}

TEST(FlagValues, ListenAddresses) {
  const struct {
    const char* text;
    const char* host;
    int port;
  } ok[] = {{":9394", "0.0.0.0", 9394},
            {"0.0.0.0:9394", "0.0.0.0", 9394},
            {"127.0.0.1:0", "127.0.0.1", 0},
            {"[::1]:80", "::1", 80},
            {"9394", "0.0.0.0", 9394},
            {"localhost:65535", "localhost", 65535},
            {"127.0.0.1:8080", "127.0.0.1", 8080}};
  for (const auto& c : ok) {
    Result<ListenAddress> got = ParseListenAddress(c.text);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status().ToString();
    EXPECT_EQ(got->host, c.host) << c.text;
    EXPECT_EQ(got->port, c.port) << c.text;
  }
  for (const char* bad : {"", "host:", "host:x", ":70000", ":-1", "a:1:b", "host:99999", "x:1a"}) {
    EXPECT_FALSE(ParseListenAddress(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace vgpu
