#include "deviceplugin/kubelet_pods.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "podresources.grpc.pb.h"

namespace vgpu::deviceplugin {
namespace {

// kubelet's pod-resources service as kubelet 1.20 answers it: every pod it knows, each app
// container with the devices it holds (none for a pod being admitted).
class FakeLister final : public v1::PodResourcesLister::Service {
 public:
  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* resp) override {
    auto* served = resp->add_pod_resources();
    served->set_name("served");
    served->set_namespace_("default");
    auto* c = served->add_containers();
    c->set_name("main");
    auto* d = c->add_devices();
    d->set_resource_name("nvidia.com/gpu");
    d->add_device_ids("GPU-a-0");
    auto* sidecar = served->add_containers();  // a container without GPUs beside it
    sidecar->set_name("sidecar");

    auto* admitting = resp->add_pod_resources();
    admitting->set_name("admitting");
    admitting->set_namespace_("team");
    admitting->add_containers()->set_name("main");

    auto* other = resp->add_pod_resources();  // holds devices of another resource only
    other->set_name("other");
    other->set_namespace_("default");
    auto* oc = other->add_containers();
    oc->set_name("main");
    auto* od = oc->add_devices();
    od->set_resource_name("example.com/fpga");
    od->add_device_ids("fpga-0");
    return grpc::Status::OK;
  }
};

std::string TempSocket() {
  char dir[] = "/tmp/kubelet_pods_test.XXXXXX";
  EXPECT_NE(mkdtemp(dir), nullptr);
  return std::string(dir) + "/kubelet.sock";
}

TEST(KubeletPodLister, ListsPodsWithWhetherTheyHoldTheResource) {
  const std::string socket = TempSocket();
  FakeLister service;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + socket, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);

  KubeletPodLister lister(socket, "nvidia.com/gpu");
  auto pods = lister.List();
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  ASSERT_EQ(pods->size(), 3u);
  EXPECT_EQ((*pods)[0].ns, "default");
  EXPECT_EQ((*pods)[0].name, "served");
  EXPECT_TRUE((*pods)[0].unserved);  // its sidecar holds no GPU
  EXPECT_EQ((*pods)[1].ns, "team");
  EXPECT_EQ((*pods)[1].name, "admitting");
  EXPECT_TRUE((*pods)[1].unserved);
  EXPECT_TRUE((*pods)[2].unserved);  // an FPGA is not a GPU
  server->Shutdown();
  (void)unlink(socket.c_str());
}

TEST(KubeletPodLister, MissingSocketIsUnavailableNamingIt) {
  KubeletPodLister lister("/nonexistent/pod-resources/kubelet.sock", "nvidia.com/gpu",
                          std::chrono::milliseconds(500));
  auto pods = lister.List();
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(pods.status().message().find("/nonexistent/pod-resources/kubelet.sock"),
            std::string::npos);
}

// A socket file nobody serves (kubelet stopped): the call fails within its deadline, naming it.
TEST(KubeletPodLister, UnservedSocketIsUnavailable) {
  const std::string socket = TempSocket();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(socket.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, socket.c_str(), socket.size() + 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);  // bound, not listening
  KubeletPodLister lister(socket, "nvidia.com/gpu", std::chrono::milliseconds(500));
  auto pods = lister.List();
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(pods.status().message().find("did not answer List"), std::string::npos)
      << pods.status().ToString();
  (void)close(fd);
  (void)unlink(socket.c_str());
}

}  // namespace
}  // namespace vgpu::deviceplugin
