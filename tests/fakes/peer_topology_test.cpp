// Peer access, peer copies (fake libcuda) and the topology NVML reports (fake libnvidia-ml), both
// from the default VGPU_FAKE_TOPOLOGY of the test process's 2 GPUs: 0-1 over 4 NVLinks under one
// NUMA node.

#include <cuda.h>
#include <gtest/gtest.h>

#include <string>

#include "cuda_test_util.h"
#include "nvml_api.h"

extern "C" {
CUresult cuMemcpyPeer_ptds(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
}

namespace vgpu::fake::test {
namespace {

class PeerTest : public PrimaryContextTest {
 protected:
  void SetUp() override {
    PrimaryContextTest::SetUp();
    ASSERT_EQ(cuDeviceGet(&dev1_, 1), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx1_, dev1_), CUDA_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(cuDevicePrimaryCtxRelease(dev1_), CUDA_SUCCESS);
    PrimaryContextTest::TearDown();
  }
  CUdevice dev1_ = -1;
  CUcontext ctx1_ = nullptr;
};

TEST_F(PeerTest, CapabilityFollowsTheTopology) {
  int can = -1;
  ASSERT_EQ(cuDeviceCanAccessPeer(&can, dev_, dev1_), CUDA_SUCCESS);
  EXPECT_EQ(can, 1);
  ASSERT_EQ(cuDeviceCanAccessPeer(&can, dev_, dev_), CUDA_SUCCESS);
  EXPECT_EQ(can, 0);  // a device is not its own peer
  EXPECT_EQ(cuDeviceCanAccessPeer(&can, dev_, 7), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuDeviceCanAccessPeer(nullptr, dev_, dev1_), CUDA_ERROR_INVALID_VALUE);
  int v = -1;
  ASSERT_EQ(cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, dev_, dev1_),
            CUDA_SUCCESS);
  EXPECT_EQ(v, 1);
  ASSERT_EQ(
      cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, dev_, dev1_),
      CUDA_SUCCESS);
  EXPECT_EQ(v, 1);  // NVLink
  EXPECT_EQ(cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, dev_, dev_),
            CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(PeerTest, EnableAndDisableFollowTheDriversErrors) {
  EXPECT_EQ(cuCtxEnablePeerAccess(ctx_, 0), CUDA_ERROR_INVALID_CONTEXT);  // itself
  EXPECT_EQ(cuCtxEnablePeerAccess(ctx1_, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuCtxDisablePeerAccess(ctx1_), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  ASSERT_EQ(cuCtxEnablePeerAccess(ctx1_, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxEnablePeerAccess(ctx1_, 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
  // One direction only: from ctx1 to ctx it is not enabled.
  ASSERT_EQ(cuCtxSetCurrent(ctx1_), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxDisablePeerAccess(ctx_), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxDisablePeerAccess(ctx1_), CUDA_SUCCESS);
  // A second context on the same device is no peer.
  CUcontext same = nullptr;
  ASSERT_EQ(cuCtxCreate_v2(&same, 0, dev_), CUDA_SUCCESS);  // becomes current
  EXPECT_EQ(cuCtxEnablePeerAccess(ctx_, 0), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
  ASSERT_EQ(cuCtxDestroy(same), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
}

TEST_F(PeerTest, PeerCopiesCheckEachRangeOnItsContextsGpu) {
  const size_t before0 = FreeMemory();
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAlloc(&a, 4096), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx1_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&b, 4096), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyPeer(b, ctx1_, a, ctx_, 4096), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyPeer_ptds(a, ctx_, b, ctx1_, 100), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyPeerAsync(b + 96, ctx1_, a, ctx_, 4000, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyPeerAsync_ptsz(b, ctx1_, a, ctx_, 1, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyPeer(b, ctx1_, a, ctx_, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyPeer(b, ctx1_, a, ctx_, 4097), CUDA_ERROR_INVALID_VALUE);  // past the end
  EXPECT_EQ(cuMemcpyPeer(a, ctx1_, b, ctx_, 16), CUDA_ERROR_INVALID_VALUE);    // wrong GPUs
  EXPECT_EQ(cuMemcpyPeer(b, nullptr, a, ctx_, 16), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(FreeMemory(), before0 - 4096);  // copies allocate nothing
  EXPECT_EQ(cuMemFree(a), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(b), CUDA_SUCCESS);  // another GPU's memory, freed from this context
}

TEST_F(PeerTest, ReachableThroughGetProcAddress) {
  for (const char* name :
       {"cuMemcpyPeer", "cuMemcpyPeerAsync", "cuDeviceCanAccessPeer", "cuCtxEnablePeerAccess",
        "cuCtxDisablePeerAccess", "cuDeviceGetP2PAttribute"}) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status{};
    EXPECT_EQ(cuGetProcAddress_v2(name, &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status),
              CUDA_SUCCESS)
        << name;
    EXPECT_NE(fn, nullptr) << name;
  }
  void* per_thread = nullptr;
  CUdriverProcAddressQueryResult status{};
  ASSERT_EQ(cuGetProcAddress_v2("cuMemcpyPeer", &per_thread, 12000,
                                CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(per_thread, reinterpret_cast<void*>(&cuMemcpyPeer_ptds));
}

class NvmlTopologyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
    ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(0, &dev0_), NVML_SUCCESS);
    ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(1, &dev1_), NVML_SUCCESS);
  }
  void TearDown() override { EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS); }
  nvmlDevice_t dev0_ = nullptr;
  nvmlDevice_t dev1_ = nullptr;
};

TEST_F(NvmlTopologyTest, CommonAncestorAndP2PStatus) {
  nvmlGpuTopologyLevel_t level{};
  ASSERT_EQ(nvmlDeviceGetTopologyCommonAncestor(dev0_, dev1_, &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_NODE);
  ASSERT_EQ(nvmlDeviceGetTopologyCommonAncestor(dev0_, dev0_, &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_INTERNAL);
  EXPECT_EQ(nvmlDeviceGetTopologyCommonAncestor(dev0_, dev1_, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  nvmlGpuP2PStatus_t st{};
  ASSERT_EQ(nvmlDeviceGetP2PStatus(dev0_, dev1_, NVML_P2P_CAPS_INDEX_NVLINK, &st), NVML_SUCCESS);
  EXPECT_EQ(st, NVML_P2P_STATUS_OK);
  ASSERT_EQ(nvmlDeviceGetP2PStatus(dev0_, dev0_, NVML_P2P_CAPS_INDEX_READ, &st), NVML_SUCCESS);
  EXPECT_EQ(st, NVML_P2P_STATUS_NOT_SUPPORTED);
}

TEST_F(NvmlTopologyTest, FourNvLinksToThePeer) {
  nvmlPciInfo_t peer{};
  ASSERT_EQ(nvmlDeviceGetPciInfo_v3(dev1_, &peer), NVML_SUCCESS);
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t state{};
    ASSERT_EQ(nvmlDeviceGetNvLinkState(dev0_, link, &state), NVML_SUCCESS) << link;
    nvmlPciInfo_t remote{};
    nvmlIntNvLinkDeviceType_t type{};
    if (link < 4) {
      EXPECT_EQ(state, NVML_FEATURE_ENABLED) << link;
      ASSERT_EQ(nvmlDeviceGetNvLinkRemotePciInfo_v2(dev0_, link, &remote), NVML_SUCCESS);
      EXPECT_STREQ(remote.busId, peer.busId);
      ASSERT_EQ(nvmlDeviceGetNvLinkRemoteDeviceType(dev0_, link, &type), NVML_SUCCESS);
      EXPECT_EQ(type, NVML_NVLINK_DEVICE_TYPE_GPU);
    } else {
      EXPECT_EQ(state, NVML_FEATURE_DISABLED) << link;
      EXPECT_EQ(nvmlDeviceGetNvLinkRemotePciInfo(dev0_, link, &remote), NVML_ERROR_NOT_SUPPORTED);
    }
  }
  nvmlEnableState_t state{};
  EXPECT_EQ(nvmlDeviceGetNvLinkState(dev0_, NVML_NVLINK_MAX_LINKS, &state),
            NVML_ERROR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace vgpu::fake::test
