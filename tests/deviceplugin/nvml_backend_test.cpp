// NVML discovery and XID events through dlopen, against the project's fake libnvidia-ml.so.1.

#include "deviceplugin/nvml_backend.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace vgpu::deviceplugin {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kLib = std::string(VGPU_FAKE_DRIVER_DIR) + "/libnvidia-ml.so.1";

class NvmlBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = fs::temp_directory_path() / ("vgpu-dp-nvml-" + std::to_string(::getpid()));
    fs::create_directories(state_);
    ::setenv("VGPU_FAKE_STATE_DIR", state_.c_str(), 1);
    ::setenv("VGPU_FAKE_GPUS", "2", 1);
    ::setenv("VGPU_FAKE_GPU_MEMORY", "40g,80g", 1);
    ::setenv("VGPU_FAKE_GPU_NAME", "NVIDIA H100 80GB HBM3", 1);
    ::setenv("VGPU_FAKE_GPU_UUIDS",
             "GPU-11111111-2222-3333-4444-555555555555,GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
             1);
  }
  void TearDown() override {
    ::unsetenv("VGPU_FAKE_TOPOLOGY");
    fs::remove_all(state_);
  }
  fs::path state_;
};

TEST_F(NvmlBackendTest, DiscoversGpusWithNumaFromSysfs) {
  // A fake sysfs: GPU 1 (bus 0x19) sits on NUMA node 1; GPU 0 has no entry (reported as 0).
  const fs::path sysfs = state_ / "sys";
  fs::create_directories(sysfs / "bus/pci/devices/0000:19:00.0");
  std::ofstream(sysfs / "bus/pci/devices/0000:19:00.0/numa_node") << "1\n";
  auto backend = OpenNvmlBackend(kLib, sysfs.string());
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  auto gpus = (*backend)->Discover();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0].uuid, "GPU-11111111-2222-3333-4444-555555555555");
  EXPECT_EQ((*gpus)[0].memory_mib, 40 * 1024);
  EXPECT_EQ((*gpus)[1].memory_mib, 80 * 1024);
  EXPECT_EQ((*gpus)[1].model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ((*gpus)[1].index, 1);
  EXPECT_EQ((*gpus)[0].numa, 0);
  EXPECT_EQ((*gpus)[1].numa, 1);
  EXPECT_TRUE((*backend)->Responds((*gpus)[1].uuid));
  EXPECT_FALSE((*backend)->Responds("GPU-not-here"));
}

TEST_F(NvmlBackendTest, DeliversCriticalXidEvents) {
  auto backend = OpenNvmlBackend(kLib, "/nonexistent");
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  ASSERT_TRUE((*backend)->Discover().ok());  // registers the devices for XID events
  void* lib = ::dlopen(kLib.c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  using InjectFn = int (*)(unsigned int, unsigned long long);
  auto inject = reinterpret_cast<InjectFn>(::dlsym(lib, "vgpuFakeInjectXid"));
  ASSERT_NE(inject, nullptr);
  ASSERT_EQ(inject(1, 79), 0);
  std::optional<XidEvent> got;
  for (int i = 0; i < 100 && !got; ++i) {  // bounded wait, not a timing assertion
    auto e = (*backend)->WaitXid(100ms);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    got = *e;
  }
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->uuid, "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
  EXPECT_EQ(got->xid, 79u);
  ::dlclose(lib);
}

// The fake NVML's topology (VGPU_FAKE_TOPOLOGY) read as HAMi reads it: common ancestors and
// NVLink remote bus ids, scored like HAMi.
TEST_F(NvmlBackendTest, ReadsTheTopologyForPairScores) {
  ::setenv("VGPU_FAKE_GPUS", "4", 1);
  ::unsetenv("VGPU_FAKE_GPU_UUIDS");
  ::setenv("VGPU_FAKE_TOPOLOGY", "0-1=node+nv4,2-3=single+nv2,0-2=hostbridge,*=system", 1);
  auto backend = OpenNvmlBackend(kLib, state_.string());
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  auto topology = (*backend)->Topology();
  ASSERT_TRUE(topology.ok()) << topology.status().ToString();
  ASSERT_TRUE(topology->has_value());
  const codec::GpuTopology& t = **topology;
  ASSERT_EQ(t.gpus.size(), 4u);
  EXPECT_EQ(t.gpus[1].bus_id, "00000000:19:00.0");
  EXPECT_EQ(t.gpus[0].nvlink_remote_bus_ids.size(), 4u);
  EXPECT_EQ(t.gpus[0].nvswitch_links, 0);
  EXPECT_EQ(t.pcie_level[0][2], codec::kTopologyHostBridge);
  const codec::DevicePairScores s = codec::ScoreTopology(t);
  const std::string g0 = "GPU-00000000-0000-0000-0000-000000000000";
  const std::string g1 = "GPU-00000000-0000-0000-0000-000000000001";
  const std::string g2 = "GPU-00000000-0000-0000-0000-000000000002";
  const std::string g3 = "GPU-00000000-0000-0000-0000-000000000003";
  EXPECT_EQ(s[0].scores.at(g1), 420);
  EXPECT_EQ(s[2].scores.at(g3), 250);
  EXPECT_EQ(s[0].scores.at(g2), 30);
  EXPECT_EQ(s[1].scores.at(g3), 10);
  EXPECT_EQ(s[3].scores.at(g1), 10);

  // The default topology of the fake: 0-1 and 2-3 NVLinked.
  backend->reset();
  ::unsetenv("VGPU_FAKE_TOPOLOGY");
  backend = OpenNvmlBackend(kLib, state_.string());
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  topology = (*backend)->Topology();
  ASSERT_TRUE(topology.ok() && topology->has_value());
  EXPECT_EQ(codec::ScoreTopology(**topology)[3].scores.at(g2), 420);
  EXPECT_EQ(codec::ScoreTopology(**topology)[3].scores.at(g0), 10);
}

TEST(NvmlBackend, MissingLibraryIsAClearError) {
  auto backend = OpenNvmlBackend("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(backend.ok());
  EXPECT_NE(backend.status().message().find("--fake-gpus"), std::string::npos);
}

TEST(ReadNumaNode, Table) {
  const fs::path root = fs::temp_directory_path() / ("vgpu-dp-numa-" + std::to_string(::getpid()));
  fs::create_directories(root / "bus/pci/devices/0000:3b:00.0");
  std::ofstream(root / "bus/pci/devices/0000:3b:00.0/numa_node") << "-1\n";
  fs::create_directories(root / "bus/pci/devices/0000:af:00.0");
  std::ofstream(root / "bus/pci/devices/0000:af:00.0/numa_node") << "1\n";
  EXPECT_EQ(ReadNumaNode(root.string(), "00000000:3B:00.0"), 0);  // -1 = unknown -> 0
  EXPECT_EQ(ReadNumaNode(root.string(), "00000000:AF:00.0"), 1);  // NVML 8-digit domain, upper
  EXPECT_EQ(ReadNumaNode(root.string(), "0000:af:00.0"), 1);
  EXPECT_EQ(ReadNumaNode(root.string(), "0000:01:00.0"), 0);  // missing
  fs::remove_all(root);
}

}  // namespace
}  // namespace vgpu::deviceplugin
