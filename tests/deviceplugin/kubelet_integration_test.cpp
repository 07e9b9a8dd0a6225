// A fake kubelet (Registration server + DevicePlugin client) drives the real vgpu-device-plugin
// binary, started with --fake-gpus, while the in-process API server holds the node and pods.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "api.grpc.pb.h"
#include "core/codec/node_inventory.h"
#include "core/codec/pod_devices.h"
#include "fake_kubelet.h"
#include "sim/apiserver/api_server.h"

extern char** environ;

namespace vgpu::deviceplugin {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

class DevicePluginBinaryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("vgpu-dp-it-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "plugins");
    auto server = sim::ApiServer::Start();
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    api_ = std::move(*server).release();
    std::ofstream(dir_ / "kubeconfig")
        << "apiVersion: v1\nkind: Config\n"
        << "clusters:\n- name: sim\n  cluster:\n    server: " << api_->url() << "\n"
        << "users:\n- name: u\n  user:\n    token: t\n"
        << "contexts:\n- name: c\n  context:\n    cluster: sim\n"
        << "    user: u\n"
        << "current-context: c\n";
    std::ofstream(dir_ / "libvgpu.so") << "not really a library";
    ASSERT_TRUE(api_->Seed("nodes", {{"metadata", {{"name", "n1"}}}}).ok());
    kubelet_ = new FakeKubelet((dir_ / "plugins" / "kubelet.sock").string());

    std::vector<std::string> args = {
        VGPU_DEVICE_PLUGIN_BINARY,
        "--node-name=n1",
        "--kubeconfig=" + (dir_ / "kubeconfig").string(),
        "--device-plugin-path=" + (dir_ / "plugins").string(),
        "--fake-gpus=count=2,memory=40960,model=NVIDIA A100-SXM4-40GB,uuids=GPU-a;GPU-b",
        "--device-split-count=4",
        "--hook-path=" + (dir_ / "hook").string(),
        "--lock-dir=" + (dir_ / "lock").string(),
        "--libvgpu=" + (dir_ / "libvgpu.so").string(),
        "--libvgpu-version=7.7",
        "--report-interval-seconds=1",
    };
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ASSERT_EQ(::posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ), 0);
  }

  static void TearDownTestSuite() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    delete kubelet_;
    if (api_) api_->Stop();
    delete api_;
    fs::remove_all(dir_);
  }

  static std::unique_ptr<v1beta1::DevicePlugin::Stub> PluginStub(const std::string& endpoint) {
    auto channel = grpc::CreateChannel("unix://" + (dir_ / "plugins" / endpoint).string(),
                                       grpc::InsecureChannelCredentials());
    return v1beta1::DevicePlugin::NewStub(channel);
  }

  static void SetNodeLock(const std::string& value) {
    const nlohmann::json patch = {{"metadata", {{"annotations", {{"hami.io/mutex.lock", value}}}}}};
    auto patched = api_->store().Patch(*sim::FindResource("v1", "nodes"), "", "n1",
                                       sim::PatchType::kMerge, patch);
    EXPECT_TRUE(patched.ok()) << patched.status().ToString();
  }

  static nlohmann::json AllocatingPod(const std::string& name, const std::string& devices,
                                      const std::string& owner_lock = "") {
    if (!owner_lock.empty()) SetNodeLock(owner_lock);
    nlohmann::json pod = {{"metadata",
                           {{"name", name},
                            {"namespace", "default"},
                            {"annotations",
                             {{"hami.io/bind-phase", "allocating"},
                              {"hami.io/vgpu-node", "n1"},
                              {"hami.io/bind-time", "100"},
                              {"hami.io/vgpu-devices-to-allocate", devices},
                              {"hami.io/vgpu-devices-allocated", devices}}}}},
                          {"spec", {{"nodeName", "n1"}, {"containers", {{{"name", "main"}}}}}},
                          {"status", {{"phase", "Pending"}}}};
    // What the container asked, as the scheduler read it when it wrote `devices`: Allocate
    // checks the entry against the spec.
    auto entries = codec::DecodePodDevices(devices);
    if (entries.ok() && !entries->empty() && !(*entries)[0].empty()) {
      const codec::ContainerDevices& e = (*entries)[0];
      pod["spec"]["containers"][0]["resources"] = {
          {"limits",
           {{"nvidia.com/gpu", std::to_string(e.size())},
            {"nvidia.com/gpumem", std::to_string(e[0].mem_mib)},
            {"nvidia.com/gpucores", std::to_string(e[0].cores)}}}};
    }
    auto seeded = api_->Seed("pods", pod);
    EXPECT_TRUE(seeded.ok()) << seeded.status().ToString();
    return seeded.ok() ? *seeded : pod;
  }

  static std::string Ann(const nlohmann::json& obj, const std::string& key) {
    return obj["metadata"].value("annotations", nlohmann::json::object()).value(key, "<absent>");
  }

  static grpc::Status Allocate(const std::vector<std::string>& ids,
                               v1beta1::AllocateResponse* out) {
    auto stub = PluginStub(endpoint_);
    v1beta1::AllocateRequest req;
    auto* c = req.add_container_requests();
    for (const auto& id : ids) c->add_devices_ids(id);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 30s);
    return stub->Allocate(&ctx, req, out);
  }

  static inline fs::path dir_;
  static inline sim::ApiServer* api_ = nullptr;
  static inline FakeKubelet* kubelet_ = nullptr;
  static inline pid_t pid_ = -1;
  static inline std::string endpoint_;
};

TEST_F(DevicePluginBinaryTest, A_RegistersListsAndReportsInventory) {
  auto reg = kubelet_->registration.WaitFor(1);
  ASSERT_TRUE(reg) << "the plugin never registered";
  EXPECT_EQ(reg->version(), "v1beta1");
  EXPECT_EQ(reg->resource_name(), "nvidia.com/gpu");
  EXPECT_TRUE(reg->options().get_preferred_allocation_available());
  // kubelet checks it still holds a container's devices before PreStartContainer, and so never
  // calls Allocate again for a deleted pod's container (deviceplugin/plugin.cpp SetOptions).
  EXPECT_TRUE(reg->options().pre_start_required());
  endpoint_ = reg->endpoint();
  EXPECT_TRUE(fs::exists(dir_ / "plugins" / endpoint_));

  auto stub = PluginStub(endpoint_);
  {
    grpc::ClientContext ctx;
    v1beta1::DevicePluginOptions opts;
    ASSERT_TRUE(stub->GetDevicePluginOptions(&ctx, v1beta1::Empty(), &opts).ok());
    EXPECT_TRUE(opts.pre_start_required());
  }
  {
    grpc::ClientContext ctx;
    v1beta1::PreStartContainerRequest req;
    req.add_devices_ids("GPU-a-0");
    v1beta1::PreStartContainerResponse resp;
    EXPECT_TRUE(stub->PreStartContainer(&ctx, req, &resp).ok());
  }
  {
    grpc::ClientContext ctx;
    auto stream = stub->ListAndWatch(&ctx, v1beta1::Empty());
    v1beta1::ListAndWatchResponse resp;
    ASSERT_TRUE(stream->Read(&resp));
    ASSERT_EQ(resp.devices_size(), 8);
    std::set<std::string> ids;
    for (const auto& d : resp.devices()) {
      ids.insert(d.id());
      EXPECT_EQ(d.health(), "Healthy");
    }
    EXPECT_TRUE(ids.contains("GPU-a-0") && ids.contains("GPU-b-3"));
    ctx.TryCancel();
  }
  // Hook files were installed.
  EXPECT_TRUE(fs::exists(dir_ / "hook" / "vgpu" / "libvgpu.so.7.7"));
  EXPECT_TRUE(fs::exists(dir_ / "hook" / "vgpu" / "ld.so.preload"));

  // Inventory: written at start (Start() reports before returning from registration + 1 s).
  std::string inv_text;
  for (int i = 0; i < 600 && inv_text.empty(); ++i) {
    auto node = api_->Get("nodes", "", "n1");
    ASSERT_TRUE(node.ok());
    std::string v = Ann(*node, "hami.io/node-nvidia-register");
    if (v != "<absent>") inv_text = v;
    if (inv_text.empty()) std::this_thread::sleep_for(100ms);
  }
  auto inv = codec::DecodeInventory(inv_text);
  ASSERT_TRUE(inv.ok()) << inv_text;
  ASSERT_EQ(inv->size(), 2u);
  EXPECT_EQ((*inv)[0].id, "GPU-a");
  EXPECT_EQ((*inv)[0].count, 4);
  EXPECT_EQ((*inv)[0].devmem, 40960);
  EXPECT_EQ((*inv)[0].type, "NVIDIA A100-SXM4-40GB");
  EXPECT_TRUE((*inv)[1].health);
  auto node = api_->Get("nodes", "", "n1");
  EXPECT_EQ(Ann(*node, "hami.io/node-handshake").rfind("Reported", 0), 0u);
}

TEST_F(DevicePluginBinaryTest, B_PreferredAllocationSpreadsOverGpus) {
  ASSERT_FALSE(endpoint_.empty());
  auto stub = PluginStub(endpoint_);
  v1beta1::PreferredAllocationRequest req;
  auto* c = req.add_container_requests();
  for (const char* id : {"GPU-a-0", "GPU-a-1", "GPU-b-0", "GPU-b-1"})
    c->add_available_deviceids(id);
  c->set_allocation_size(2);
  grpc::ClientContext ctx;
  v1beta1::PreferredAllocationResponse resp;
  ASSERT_TRUE(stub->GetPreferredAllocation(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.container_responses_size(), 1);
  ASSERT_EQ(resp.container_responses(0).deviceids_size(), 2);
  EXPECT_NE(resp.container_responses(0).deviceids(0).substr(0, 5),
            resp.container_responses(0).deviceids(1).substr(0, 5));
}

TEST_F(DevicePluginBinaryTest, C_AllocateAnswersAndFinishesTheBind) {
  ASSERT_FALSE(endpoint_.empty());
  auto pod = AllocatingPod("good", "GPU-b,NVIDIA,3000,30:;", "2026-11-21T20:00:00Z,default,good");
  v1beta1::AllocateResponse resp;
  grpc::Status s = Allocate({"GPU-b-2"}, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.container_responses_size(), 1);
  const auto& envs = resp.container_responses(0).envs();
  EXPECT_EQ(envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-b");
  EXPECT_EQ(envs.at("CUDA_DEVICE_MEMORY_LIMIT_0"), "3000m");
  EXPECT_EQ(envs.at("CUDA_DEVICE_SM_LIMIT"), "30");
  const std::string hook = (dir_ / "hook" / "vgpu").string();
  EXPECT_EQ(envs.at("CUDA_DEVICE_MEMORY_SHARED_CACHE").rfind(hook + "/", 0), 0u);
  std::map<std::string, std::pair<std::string, bool>> mounts;
  for (const auto& m : resp.container_responses(0).mounts()) {
    mounts[m.container_path()] = {m.host_path(), m.read_only()};
  }
  const std::string uid = pod["metadata"]["uid"];
  EXPECT_EQ(mounts[hook + "/libvgpu.so"], std::make_pair(hook + "/libvgpu.so.7.7", true));
  EXPECT_EQ(mounts[hook], std::make_pair(hook + "/containers/" + uid + "_main", false));
  EXPECT_EQ(mounts["/etc/ld.so.preload"], std::make_pair(hook + "/ld.so.preload", true));
  EXPECT_TRUE(fs::is_directory(hook + "/containers/" + uid + "_main"));

  auto after = api_->Get("pods", "default", "good");
  EXPECT_EQ(Ann(*after, "hami.io/bind-phase"), "success");
  EXPECT_EQ(Ann(*after, "hami.io/vgpu-devices-to-allocate"), ";");
  auto node = api_->Get("nodes", "", "n1");
  EXPECT_EQ(Ann(*node, "hami.io/mutex.lock"), "<absent>");
}

TEST_F(DevicePluginBinaryTest, D_BadInputFailsThePodReleasesTheLockAndSaysWhy) {
  ASSERT_FALSE(endpoint_.empty());
  struct Case {
    const char* pod;
    const char* devices;
    std::vector<std::string> ids;
    const char* fragment;
  };
  const std::vector<Case> cases = {
      {"unknown-gpu", "GPU-zz,NVIDIA,1000,0:;", {"GPU-a-0"}, "GPU-zz"},
      {"count-mismatch", "GPU-a,NVIDIA,1000,0:;", {"GPU-a-0", "GPU-b-0"}, "kubelet allocated 2"},
      {"malformed", "GPU-a,NVIDIA,lots,0:;", {"GPU-a-0"}, "malformed"},
  };
  for (const auto& c : cases) {
    AllocatingPod(c.pod, c.devices, std::string("2026-11-21T20:00:00Z,default,") + c.pod);
    v1beta1::AllocateResponse resp;
    grpc::Status s = Allocate(c.ids, &resp);
    ASSERT_FALSE(s.ok()) << c.pod;
    EXPECT_NE(s.error_message().find(c.fragment), std::string::npos) << s.error_message();
    EXPECT_NE(s.error_message().find(std::string("default/") + c.pod), std::string::npos)
        << s.error_message();
    auto after = api_->Get("pods", "default", c.pod);
    EXPECT_EQ(Ann(*after, "hami.io/bind-phase"), "failed") << c.pod;
    EXPECT_EQ(Ann(*after, "hami.io/vgpu-devices-to-allocate"), c.devices) << c.pod;
    auto node = api_->Get("nodes", "", "n1");
    EXPECT_EQ(Ann(*node, "hami.io/mutex.lock"), "<absent>") << c.pod;
  }
  // No pod waiting at all: the lock (owner gone) is released and the error says so.
  SetNodeLock("2026-11-21T20:00:00Z,default,deleted-pod");
  v1beta1::AllocateResponse resp;
  grpc::Status s = Allocate({"GPU-a-0"}, &resp);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("no pod bound to node n1"), std::string::npos)
      << s.error_message();
  auto node = api_->Get("nodes", "", "n1");
  EXPECT_EQ(Ann(*node, "hami.io/mutex.lock"), "<absent>");
}

TEST_F(DevicePluginBinaryTest, E_ReRegistersWhenKubeletRestarts) {
  ASSERT_FALSE(endpoint_.empty());
  // kubelet restart: its socket is re-created and plugin sockets are wiped.
  kubelet_->Stop();
  fs::remove(dir_ / "plugins" / "kubelet.sock");
  fs::remove(dir_ / "plugins" / endpoint_);
  kubelet_->Start();
  auto reg = kubelet_->registration.WaitFor(2);
  ASSERT_TRUE(reg) << "no re-registration after kubelet restart";
  EXPECT_EQ(reg->endpoint(), endpoint_);
  auto stub = PluginStub(endpoint_);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  v1beta1::DevicePluginOptions opts;
  EXPECT_TRUE(stub->GetDevicePluginOptions(&ctx, v1beta1::Empty(), &opts).ok());
}

TEST_F(DevicePluginBinaryTest, F_UnreachableApiServerIsAClearAllocateError) {
  ASSERT_FALSE(endpoint_.empty());
  api_->FailNextRequests(1000, 503);
  v1beta1::AllocateResponse resp;
  grpc::Status s = Allocate({"GPU-a-0"}, &resp);
  api_->FailNextRequests(0);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(s.error_message().find("API server"), std::string::npos) << s.error_message();
}

TEST_F(DevicePluginBinaryTest, G_SigtermStopsCleanly) {
  ASSERT_GT(pid_, 0);
  ASSERT_EQ(::kill(pid_, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid_, &status, 0), pid_);
  pid_ = -1;
  EXPECT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(fs::exists(dir_ / "plugins" / endpoint_));
}

}  // namespace
}  // namespace vgpu::deviceplugin
