#include "core/codec/pod_devices.h"

#include <gtest/gtest.h>

namespace vgpu::codec {
namespace {

const char* kHamiExample =
    ";GPU-0fc3eda5,NVIDIA,3000,30:;GPU-0fc3eda5,NVIDIA,5000,0:GPU-7aebc545,NVIDIA,5000,0:;";

TEST(PodDevicesTest, HamiExampleDecodesWithEmptyInitEntry) {
  auto pod = DecodePodDevices(kHamiExample);
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  ASSERT_EQ(pod->size(), 3u);
  EXPECT_TRUE((*pod)[0].empty());
  ASSERT_EQ((*pod)[1].size(), 1u);
  EXPECT_EQ((*pod)[1][0], (ContainerDevice{"GPU-0fc3eda5", "NVIDIA", 3000, 30}));
  ASSERT_EQ((*pod)[2].size(), 2u);
  EXPECT_EQ((*pod)[2][1], (ContainerDevice{"GPU-7aebc545", "NVIDIA", 5000, 0}));
  EXPECT_EQ(FirstNonEmptyEntry(*pod), 1);
  EXPECT_EQ(FirstNonEmptyEntry(*pod, 2), 2);
  EXPECT_EQ(FirstNonEmptyEntry(*pod, 3), -1);
}

TEST(PodDevicesTest, RoundTrips) {
  const char* cases[] = {
      "", ";", ";;", kHamiExample, "GPU-a,NVIDIA,0,100:;", "GPU-a,NVIDIA,1,1:GPU-b,NVIDIA,2,2:;;",
  };
  for (const char* text : cases) {
    auto pod = DecodePodDevices(text);
    ASSERT_TRUE(pod.ok()) << text << ": " << pod.status().ToString();
    EXPECT_EQ(EncodePodDevices(*pod), text);
  }
}

TEST(PodDevicesTest, EncodesEmptyEntriesAsSemicolons) {
  PodDevices pod{{}, {{"GPU-x", "NVIDIA", 1024, 50}}, {}};
  EXPECT_EQ(EncodePodDevices(pod), ";GPU-x,NVIDIA,1024,50:;;");
  EXPECT_EQ(DecodePodDevices(";;;")->size(), 3u);
  EXPECT_EQ(DecodePodDevices("")->size(), 0u);
}

TEST(PodDevicesTest, RejectsMalformedWithClearErrors) {
  struct Case {
    const char* text;
    const char* want_in_message;
  };
  const Case cases[] = {
      {"GPU-a,NVIDIA,3000,30:", "does not end with ';'"},
      {"GPU-a,NVIDIA,3000,30;", "does not end with ':'"},
      {"GPU-a,NVIDIA,3000:;", "want 4 fields"},
      {"GPU-a,NVIDIA,3000,30,1:;", "want 4 fields"},
      {",NVIDIA,3000,30:;", "empty device UUID"},
      {"GPU-a,,3000,30:;", "empty vendor"},
      {"GPU-a,NVIDIA,3k,30:;", "memory (MiB) '3k' is not a whole number"},
      {"GPU-a,NVIDIA,-1,30:;", "memory (MiB) '-1' is too small (min 0)"},
      // Past int64: too large, never "negative" or "not a number".
      {"GPU-a,NVIDIA,99999999999999999999,30:;",
       "memory (MiB) '99999999999999999999' is too large (max 9223372036854775807)"},
      {"GPU-a,NVIDIA,10,101:;", "cores (percent) '101' is too large (max 100)"},
      {"GPU-a,NVIDIA,10,99999999999:;", "cores (percent) '99999999999' is too large (max 100)"},
      {";GPU-a,NVIDIA,10,1::;", "container entry 1, device 1"},
  };
  for (const auto& c : cases) {
    auto pod = DecodePodDevices(c.text);
    ASSERT_FALSE(pod.ok()) << c.text;
    EXPECT_EQ(pod.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(pod.status().message().find(c.want_in_message), std::string::npos)
        << c.text << " -> " << pod.status().message();
  }
}

}  // namespace
}  // namespace vgpu::codec
