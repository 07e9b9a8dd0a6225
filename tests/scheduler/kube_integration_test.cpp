// The extender wired to Kubernetes as in production (kube::Client, watches, JSON patches,
// bindings) against the in-process API server, driven over HTTP like kube-scheduler does.

#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "kube/client.h"
#include "scheduler/scheduler_service.h"
#include "sim/apiserver/api_server.h"
#include "test_objects.h"

namespace vgpu::scheduler {
namespace {

using nlohmann::json;

template <typename F>
bool Eventually(F f) {
  for (int i = 0; i < 1000; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

TEST(KubeIntegration, FilterBindOverHttpAgainstApiServer) {
  auto apiserver = sim::ApiServer::Start();
  ASSERT_TRUE(apiserver.ok()) << apiserver.status().ToString();
  kube::ClientConfig cfg;
  cfg.server = (*apiserver)->url();
  cfg.qps = 0;
  auto client = kube::Client::New(cfg);
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  ASSERT_TRUE((*apiserver)->Seed("nodes", testing::GpuNode("n1", 2)).ok());
  json bad = testing::GpuNode("n2", 0);
  bad["metadata"]["annotations"]["hami.io/node-nvidia-register"] = "GPU-x,garbage";
  ASSERT_TRUE((*apiserver)->Seed("nodes", bad).ok());
  json pod = testing::GpuPod("p", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "2000"}});
  pod["metadata"].erase("uid");  // the API server assigns it
  auto created = (*apiserver)->Seed("pods", pod);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  pod = *created;

  SchedulerServiceOptions options;
  options.feed.write_handshake = false;
  auto service = SchedulerService::Start(options, **client);
  ASSERT_TRUE(service.ok()) << service.status().ToString();
  ASSERT_TRUE((*service)->WaitReady(std::chrono::seconds(10)));
  ClusterModel& model = (*service)->model();
  httplib::Client http("127.0.0.1", (*service)->port());
  auto ready = http.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);

  ASSERT_TRUE(Eventually([&] { return model.node_count() == 2; }));
  auto f = http.Post("/filter", json{{"Pod", pod}, {"NodeNames", {"n1", "n2"}}}.dump(),
                     "application/json");
  ASSERT_TRUE(f);
  json fr = json::parse(f->body);
  EXPECT_EQ(fr["nodenames"], json::array({"n1"}));
  EXPECT_NE(fr["failedNodes"]["n2"].get<std::string>().find("NodeUnregistered"), std::string::npos);

  auto b = http.Post("/bind", testing::BindArgs(pod, "n1").dump(), "application/json");
  ASSERT_TRUE(b);
  EXPECT_EQ(json::parse(b->body)["error"], "") << b->body;

  auto bound = (*apiserver)->Get("pods", "default", "p");
  ASSERT_TRUE(bound.ok());
  EXPECT_EQ((*bound)["spec"]["nodeName"], "n1");
  EXPECT_EQ((*bound)["metadata"]["annotations"]["hami.io/vgpu-devices-allocated"],
            "GPU-n1-0,NVIDIA,2000,0:;");
  EXPECT_EQ((*bound)["metadata"]["annotations"]["hami.io/bind-phase"], "allocating");
  auto node = (*apiserver)->Get("nodes", "", "n1");
  ASSERT_TRUE(node.ok());
  EXPECT_NE((*node)["metadata"]["annotations"]["hami.io/mutex.lock"].get<std::string>().find(
                ",default,p"),
            std::string::npos);
  // The watch brings the annotations back: usage comes from them, the reservation is gone.
  EXPECT_TRUE(Eventually([&] { return model.reservation_count() == 0; }));
  EXPECT_EQ(model.UsageOf("n1", "GPU-n1-0"), (sched::DeviceUsage{1, 2000, 0}));

  // A ResourceQuota created through the API reaches the filter through the watch.
  ASSERT_TRUE(
      (*apiserver)
          ->Seed("resourcequotas", json::parse(R"({"metadata":{"name":"gpu","namespace":"default"},
                           "spec":{"hard":{"limits.nvidia.com/gpumem":"3000"}}})"))
          .ok());
  ASSERT_TRUE(Eventually([&] { return model.Quota("default").has_value(); }));
  json second = testing::GpuPod("second", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "2000"}});
  auto q =
      http.Post("/filter", json{{"pod", second}, {"nodenames", {"n1"}}}.dump(), "application/json");
  ASSERT_TRUE(q);
  EXPECT_NE(
      json::parse(q->body)["failedNodes"]["n1"].get<std::string>().find("ResourceQuotaExceeded"),
      std::string::npos)
      << q->body;

  // Deleting the pod frees its GPU in the model.
  ASSERT_TRUE((*client)->Delete(kube::kPods, "default", "p").ok());
  EXPECT_TRUE(Eventually([&] { return model.UsageOf("n1", "GPU-n1-0") == sched::DeviceUsage{}; }));
  (*service)->Stop();
}

}  // namespace
}  // namespace vgpu::scheduler
