#include "scheduler/extender.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/base/log.h"
#include "core/codec/base64.h"
#include "core/codec/time_format.h"
#include "fake_cluster_api.h"
#include "test_objects.h"

namespace vgpu::scheduler {
namespace {

using nlohmann::json;
using testing::BindArgs;
using testing::FakeClusterApi;
using testing::FilterArgs;
using testing::GpuNode;
using testing::GpuPod;

class ExtenderTest : public ::testing::Test {
 protected:
  ExtenderTest() : api_(&model_) {
    options_.lock.wait_timeout = std::chrono::milliseconds(5000);
    options_.lock.poll_min = std::chrono::milliseconds(1);
    options_.lock.poll_max = std::chrono::milliseconds(5);
  }
  Extender& extender() {
    if (!extender_) extender_ = std::make_unique<Extender>(options_, model_, api_, metrics_);
    return *extender_;
  }
  std::string Annotation(const std::string& pod, const std::string& key) {
    json p = api_.Pod("default", pod);
    return p["metadata"]["annotations"].value(key, "");
  }

  ExtenderOptions options_;
  ClusterModel model_;
  FakeClusterApi api_;
  SchedulerMetrics metrics_;
  std::unique_ptr<Extender> extender_;
};

TEST_F(ExtenderTest, FilterReturnsEveryFeasibleNodeAndReasons) {
  api_.PutNode(GpuNode("big", 2, 40000));
  api_.PutNode(GpuNode("small", 2, 8000));
  api_.PutNode(GpuNode("one", 1, 40000));
  json bad = GpuNode("garbage", 0);
  bad["metadata"]["annotations"]["hami.io/node-nvidia-register"] = "[{not json";
  api_.PutNode(bad);
  json pod = GpuPod("p", {{"nvidia.com/gpu", "2"}, {"nvidia.com/gpumem", "10000"}});
  api_.PutPod(pod);
  VerbResult r = extender().Filter(FilterArgs(pod, {"big", "small", "one", "garbage", "nowhere"}));
  ASSERT_EQ(r.http_status, 200);
  EXPECT_EQ(r.Json()["nodenames"], json::array({"big"}));
  EXPECT_EQ(r.Json()["error"], "");
  const json failed = r.Json()["failedNodes"];
  ASSERT_EQ(failed.size(), 4u) << failed.dump();
  EXPECT_EQ(failed["small"].get<std::string>().rfind("CardInsufficientMemory", 0), 0u)
      << failed["small"];
  EXPECT_EQ(failed["one"].get<std::string>().rfind("NodeInsufficientDevice", 0), 0u)
      << failed["one"];
  EXPECT_NE(failed["garbage"].get<std::string>().find("unreadable"), std::string::npos);
  EXPECT_NE(failed["nowhere"].get<std::string>().find("unknown"), std::string::npos);
  EXPECT_EQ(metrics_.rejections(sched::Reason::kCardInsufficientMemory), 1u);
  EXPECT_EQ(metrics_.rejections(sched::Reason::kNodeUnregistered), 2u);
}

TEST_F(ExtenderTest, FilterAcceptsOldCapitalisedFieldsAndNodeObjects) {
  api_.PutNode(GpuNode("n1", 1));
  json pod = GpuPod("p", {{"nvidia.com/gpu", "1"}});
  // kube-scheduler 1.20 without json tags: "Pod", "NodeNames".
  VerbResult r = extender().Filter({{"Pod", pod}, {"NodeNames", {"n1"}}});
  EXPECT_EQ(r.Json()["nodenames"], json::array({"n1"}));
  // Not nodeCacheCapable: whole Node objects come and go back.
  VerbResult r2 = extender().Filter(
      {{"pod", pod}, {"nodes", {{"items", {GpuNode("n1", 1), GpuNode("x", 1)}}}}});
  ASSERT_EQ(r2.Json()["nodes"]["items"].size(), 1u);
  EXPECT_EQ(r2.Json()["nodes"]["items"][0]["metadata"]["name"], "n1");
  EXPECT_TRUE(r2.Json()["failedNodes"].contains("x"));
}

// Long candidate lists are split over threads; the answer must be the one a single thread gives.
TEST_F(ExtenderTest, ParallelFilterMatchesSerialFilter) {
  std::vector<std::string> names;
  for (int i = 0; i < 1500; ++i) {
    names.push_back("n" + std::to_string(i));
    api_.PutNode(GpuNode(names.back(), 1 + i % 3, i % 4 == 0 ? 2000 : 24000));
  }
  names.push_back("unknown");
  json pod = GpuPod("p", {{"nvidia.com/gpu", "2"}, {"nvidia.com/gpumem", "3000"}});
  options_.filter_parallelism = 8;
  Extender parallel(options_, model_, api_, metrics_);
  options_.filter_parallelism = 1;
  Extender serial(options_, model_, api_, metrics_);
  const json a = parallel.Filter(FilterArgs(pod, names)).Json();
  const json b = serial.Filter(FilterArgs(pod, names)).Json();
  EXPECT_EQ(a, b);
  // i % 3 == 0 has one GPU; i % 4 == 0 has 2000 MiB cards: 1500 - 500 - (375 - 125) feasible.
  EXPECT_EQ(a["nodenames"].size(), 750u);
  EXPECT_EQ(a["failedNodes"].size(), 751u);
  EXPECT_EQ(parallel.Prioritize(FilterArgs(pod, a["nodenames"])).Json(),
            serial.Prioritize(FilterArgs(pod, a["nodenames"])).Json());
}

TEST_F(ExtenderTest, PodsWithoutVgpuPassEverywhere) {
  json pod = GpuPod("plain", json::object());
  VerbResult r = extender().Filter(FilterArgs(pod, {"a", "b"}));
  EXPECT_EQ(r.Json()["nodenames"], json::array({"a", "b"}));
}

TEST_F(ExtenderTest, BadInputGivesClearErrorsAndWritesNothing) {
  api_.PutNode(GpuNode("n1", 1));
  json unknown_policy = GpuPod("p", {{"nvidia.com/gpu", "1"}}, "default",
                               {{"hami.io/node-scheduler-policy", "fastest"}});
  struct Case {
    const char* name;
    std::function<VerbResult()> call;
    int status;
    const char* want;
  };
  const Case cases[] = {
      {"args not an object", [&] { return extender().Filter(json::array()); }, 400, "JSON object"},
      {"no pod",
       [&] {
         return extender().Filter({{"nodenames", {"n1"}}});
       },
       400, "no Pod"},
      {"nodenames not strings",
       [&] {
         return extender().Filter({{"pod", GpuPod("p", {})}, {"nodenames", {1}}});
       },
       400, "non-string"},
      {"no candidates",
       [&] {
         return extender().Filter({{"pod", GpuPod("p", {})}});
       },
       400, "neither"},
      {"unknown policy", [&] { return extender().Filter(FilterArgs(unknown_policy, {"n1"})); }, 200,
       "fastest"},
      {"garbage quantity",
       [&] {
         return extender().Filter(FilterArgs(GpuPod("p", {{"nvidia.com/gpumem", "lots"}}), {"n1"}));
       },
       200, "nvidia.com/gpumem"},
      {"prioritize garbage", [&] { return extender().Prioritize(json("x")); }, 400, "JSON object"},
      {"bind without node",
       [&] {
         return extender().Bind({{"podName", "p"}, {"podNamespace", "default"}});
       },
       400, "Node"},
      {"bind of unknown pod",
       [&] {
         return extender().Bind(
             {{"podName", "ghost"}, {"podNamespace", "default"}, {"node", "n1"}});
       },
       200, "NotFound"},
      {"review not an object", [&] { return extender().Admit(json(3)); }, 400, "JSON object"},
      {"review without request",
       [&] {
         return extender().Admit({{"apiVersion", "admission.k8s.io/v1"}});
       },
       400, "no request"},
      {"review of unknown version",
       [&] {
         return extender().Admit(
             {{"apiVersion", "admission.k8s.io/v2"}, {"request", json::object()}});
       },
       400, "unsupported"},
  };
  const int patches_before = api_.node_patches;
  for (const Case& c : cases) {
    VerbResult r = c.call();
    EXPECT_EQ(r.http_status, c.status) << c.name;
    const std::string error = r.Json().is_object() ? r.Json().value("error", "") : "";
    EXPECT_NE(error.find(c.want), std::string::npos) << c.name << ": " << r.Json().dump();
  }
  EXPECT_EQ(api_.node_patches, patches_before);
  EXPECT_EQ(api_.binds, 0);
  EXPECT_EQ(model_.reservation_count(), 0u);
}

TEST_F(ExtenderTest, PrioritizeScoresFollowNodePolicy) {
  api_.PutNode(GpuNode("empty", 1, 10000));
  api_.PutNode(GpuNode("busy", 1, 10000));
  json running = GpuPod(
      "running",
      {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "8000"}, {"nvidia.com/gpucores", "80"}});
  running["spec"]["nodeName"] = "busy";
  running["metadata"]["annotations"] = {
      {"hami.io/vgpu-devices-allocated", "GPU-busy-0,NVIDIA,8000,80:;"}};
  running["status"]["phase"] = "Running";
  api_.PutPod(running);
  for (const char* policy : {"binpack", "spread"}) {
    json pod =
        GpuPod(std::string("p-") + policy, {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1000"}},
               "default", {{"hami.io/node-scheduler-policy", policy}});
    ASSERT_EQ(extender().Filter(FilterArgs(pod, {"empty", "busy"})).Json()["nodenames"].size(), 2u);
    VerbResult r = extender().Prioritize(FilterArgs(pod, {"empty", "busy"}));
    ASSERT_EQ(r.Json().size(), 2u);
    const int empty = r.Json()[0]["score"], busy = r.Json()[1]["score"];
    EXPECT_EQ(r.Json()[0]["host"], "empty");
    for (int s : {empty, busy}) {
      EXPECT_GE(s, 0);
      EXPECT_LE(s, 10);
    }
    if (std::string(policy) == "binpack") {
      EXPECT_GT(busy, empty);
    } else {
      EXPECT_LT(busy, empty);
    }
  }
}

TEST_F(ExtenderTest, BindWritesHamiAnnotationsTakesLockAndBinds) {
  api_.PutNode(GpuNode("n1", 2));
  json pod = GpuPod(
      "p", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}, {"nvidia.com/gpucores", "30"}});
  pod["spec"]["initContainers"] = {{{"name", "init"}}};
  api_.PutPod(pod);
  ASSERT_EQ(extender().Filter(FilterArgs(pod, {"n1"})).Json()["nodenames"].size(), 1u);
  VerbResult r = extender().Bind(BindArgs(pod, "n1"));
  ASSERT_EQ(r.Json()["error"], "") << r.Json().dump();
  json after = api_.Pod("default", "p");
  const json& a = after["metadata"]["annotations"];
  EXPECT_EQ(a["hami.io/vgpu-devices-allocated"], ";GPU-n1-0,NVIDIA,3000,30:;");
  EXPECT_EQ(a["hami.io/vgpu-devices-to-allocate"], ";GPU-n1-0,NVIDIA,3000,30:;");
  EXPECT_EQ(a["hami.io/vgpu-node"], "n1");
  EXPECT_EQ(a["hami.io/bind-phase"], "allocating");
  EXPECT_FALSE(a["hami.io/bind-time"].get<std::string>().empty());
  EXPECT_FALSE(a["hami.io/vgpu-time"].get<std::string>().empty());
  EXPECT_EQ(after["metadata"]["labels"]["hami.io/vgpu-node"], "n1");
  EXPECT_EQ(after["spec"]["nodeName"], "n1");
  const std::string lock = api_.Node("n1")["metadata"]["annotations"]["hami.io/mutex.lock"];
  EXPECT_NE(lock.find(",default,p"), std::string::npos) << lock;
  EXPECT_EQ(lock.find('T'), 10u) << lock;  // RFC3339
  // The watch showed the annotations: usage comes from them, no reservation remains.
  EXPECT_EQ(model_.reservation_count(), 0u);
  EXPECT_EQ(model_.UsageOf("n1", "GPU-n1-0"), (sched::DeviceUsage{1, 3000, 30}));
}

TEST_F(ExtenderTest, FailedBindLeavesNothingBehind) {
  api_.PutNode(GpuNode("n1", 1));
  json pod = GpuPod("p", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}});
  api_.PutPod(pod);
  api_.fail_binds = 1;
  VerbResult r = extender().Bind(BindArgs(pod, "n1"));
  EXPECT_NE(r.Json()["error"].get<std::string>().find("injected binding failure"),
            std::string::npos);
  EXPECT_EQ(model_.reservation_count(), 0u);
  EXPECT_EQ(model_.UsageOf("n1", "GPU-n1-0"), sched::DeviceUsage{});
  EXPECT_FALSE(api_.Node("n1")["metadata"]["annotations"].contains("hami.io/mutex.lock"));
  EXPECT_EQ(Annotation("p", "hami.io/bind-phase"), "failed");
  EXPECT_EQ(metrics_.bind_failures.load(), 1u);
  // kube-scheduler retries: now it works, and the failed attempt did not count twice.
  VerbResult again = extender().Bind(BindArgs(pod, "n1"));
  EXPECT_EQ(again.Json()["error"], "") << again.Json().dump();
  EXPECT_EQ(model_.UsageOf("n1", "GPU-n1-0"), (sched::DeviceUsage{1, 3000, 0}));
}

std::string* g_bind_log = nullptr;
void CaptureBindLog(std::string_view line) {
  if (g_bind_log != nullptr) g_bind_log->append(line);
}

// A deployment warns about a refused bind; `vgpu sim` asks for info (its report counts them), so
// a run that keeps warnings only prints none for them.
TEST_F(ExtenderTest, RefusedBindLogsAtTheLevelAsked) {
  api_.PutNode(GpuNode("n1", 1));
  json pod = GpuPod("p", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}});
  api_.PutPod(pod);
  std::string lines;
  g_bind_log = &lines;
  log::SetSink(CaptureBindLog);
  api_.fail_binds = 1;
  (void)extender().Bind(BindArgs(pod, "n1"));
  EXPECT_NE(lines.find("level=warn msg=\"bind failed\""), std::string::npos) << lines;
  lines.clear();
  options_.bind_failure_level = log::Level::kInfo;
  Extender sim_like(options_, model_, api_, metrics_);
  api_.fail_binds = 1;
  (void)sim_like.Bind(BindArgs(pod, "n1"));
  EXPECT_NE(lines.find("level=info msg=\"bind failed\""), std::string::npos) << lines;
  log::SetSink(nullptr);
  g_bind_log = nullptr;
}

// kube-scheduler 1.20 may call bind again for a pod it has already bound (e2e churn): the second
// call is refused and changes nothing, neither the running pod's devices nor the model's usage.
TEST_F(ExtenderTest, SecondBindOfABoundPodIsRefusedAndChangesNothing) {
  api_.PutNode(GpuNode("n1", 2));
  json pod = GpuPod("p", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}});
  api_.PutPod(pod);
  ASSERT_EQ(extender().Filter(FilterArgs(pod, {"n1"})).Json()["nodenames"].size(), 1u);
  ASSERT_EQ(extender().Bind(BindArgs(pod, "n1")).Json()["error"], "");
  const std::string devices = Annotation("p", "hami.io/vgpu-devices-allocated");
  ASSERT_TRUE(
      api_.MergePatchPod("default", "p",
                         {{"metadata", {{"annotations", {{"hami.io/bind-phase", "success"}}}}}})
          .ok());
  const auto usage = model_.UsageOf("n1", "GPU-n1-0");
  ASSERT_EQ(extender().Filter(FilterArgs(pod, {"n1"})).Json()["nodenames"].size(), 1u);
  VerbResult again = extender().Bind(BindArgs(pod, "n1"));
  EXPECT_NE(again.Json()["error"].get<std::string>().find("already bound to n1"), std::string::npos)
      << again.Json().dump();
  EXPECT_EQ(Annotation("p", "hami.io/vgpu-devices-allocated"), devices);
  EXPECT_EQ(Annotation("p", "hami.io/bind-phase"), "success");
  EXPECT_EQ(model_.UsageOf("n1", "GPU-n1-0"), usage);
  EXPECT_EQ(model_.UsageOf("n1", "GPU-n1-1"), sched::DeviceUsage{});
  EXPECT_EQ(api_.binds, 1);
}

// kube-scheduler sends the filter the pod as its informer holds it, resourceVersion included:
// when the pod is unbound there, bind writes its annotations on that version instead of reading
// the pod again, and takes the node lock on the version the node watch last showed.
TEST_F(ExtenderTest, BindOnTheFilteredVersionReadsNeitherPodNorNode) {
  api_.PutNode(GpuNode("n1", 2));
  api_.PutPod(GpuPod("p", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}}));
  const json pod = api_.Pod("default", "p");
  ASSERT_FALSE(pod["metadata"].value("resourceVersion", "").empty());
  ASSERT_EQ(extender().Filter(FilterArgs(pod, {"n1"})).Json()["nodenames"].size(), 1u);
  VerbResult r = extender().Bind(BindArgs(pod, "n1"));
  ASSERT_EQ(r.Json()["error"], "") << r.Json().dump();
  EXPECT_EQ(api_.pod_gets, 0);
  EXPECT_EQ(api_.node_gets, 0);
  EXPECT_EQ(Annotation("p", "hami.io/vgpu-devices-allocated"), "GPU-n1-0,NVIDIA,3000,0:;");
  EXPECT_EQ(api_.Pod("default", "p")["spec"]["nodeName"], "n1");
  const std::string lock = api_.Node("n1")["metadata"]["annotations"]["hami.io/mutex.lock"];
  EXPECT_NE(lock.find(",default,p"), std::string::npos) << lock;
}

// An extender whose model sees only what the test shows it (no watch): node n1 and pod p as they
// were when p was filtered onto n1; later changes reach the API server alone.
struct LaggingWatch {
  explicit LaggingWatch(const ExtenderOptions& options, SchedulerMetrics& metrics)
      : ext(options, model, api, metrics) {
    api.PutNode(GpuNode("n1", 2));
    model.UpsertNode(api.Node("n1"));
    api.PutPod(GpuPod("p", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}}));
    pod = api.Pod("default", "p");
    model.UpsertPod(pod);
    filtered = ext.Filter(FilterArgs(pod, {"n1"})).Json()["nodenames"].size();
  }
  FakeClusterApi api;
  ClusterModel model;
  Extender ext;
  json pod;
  size_t filtered = 0;  // nodes the filter passed
};

// The pod changed after the filter (a controller labelled it): the guarded patch is refused, the
// pod read, and, unbound, written and bound. A node the watch shows at an old version costs one
// refused lock patch, then a read.
TEST_F(ExtenderTest, PodOrNodeChangedSinceTheFilterIsReadAgain) {
  LaggingWatch w(options_, metrics_);
  ASSERT_EQ(w.filtered, 1u);
  FakeClusterApi& api = w.api;
  Extender& ext = w.ext;
  const json& pod = w.pod;
  ASSERT_TRUE(
      api.MergePatchPod("default", "p", {{"metadata", {{"labels", {{"team", "a"}}}}}}).ok());
  json node = api.Node("n1");
  node["metadata"]["labels"]["zone"] = "b";
  api.PutNode(node);  // a new version the model has not seen
  VerbResult r = ext.Bind(BindArgs(pod, "n1"));
  ASSERT_EQ(r.Json()["error"], "") << r.Json().dump();
  EXPECT_EQ(api.pod_gets, 1);
  EXPECT_EQ(api.node_gets, 1);
  const json after = api.Pod("default", "p");
  EXPECT_EQ(after["spec"]["nodeName"], "n1");
  EXPECT_EQ(after["metadata"]["labels"]["team"], "a");
  EXPECT_EQ(after["metadata"]["annotations"]["hami.io/bind-phase"], "allocating");
}

// Bound elsewhere after the filter (another replica, before this one's watch showed it): the
// guarded patch is refused, the read shows the binding, and the bind leaves nothing behind.
TEST_F(ExtenderTest, PodBoundSinceTheFilterIsRefusedAndLeavesNothing) {
  LaggingWatch w(options_, metrics_);
  ASSERT_EQ(w.filtered, 1u);
  FakeClusterApi& api = w.api;
  ClusterModel& model = w.model;
  Extender& ext = w.ext;
  const json& pod = w.pod;
  ASSERT_TRUE(api.BindPod("default", "p", "", "n2").ok());
  VerbResult r = ext.Bind(BindArgs(pod, "n1"));
  EXPECT_NE(r.Json()["error"].get<std::string>().find("already bound to n2"), std::string::npos)
      << r.Json().dump();
  EXPECT_EQ(model.reservation_count(), 0u);
  EXPECT_EQ(model.UsageOf("n1", "GPU-n1-0"), sched::DeviceUsage{});
  EXPECT_FALSE(api.Node("n1")["metadata"]["annotations"].contains("hami.io/mutex.lock"));
  const json annotations = api.Pod("default", "p")["metadata"].value("annotations", json::object());
  EXPECT_FALSE(annotations.contains("hami.io/vgpu-devices-allocated")) << annotations.dump();
  EXPECT_FALSE(annotations.contains("hami.io/bind-phase")) << annotations.dump();
  EXPECT_EQ(api.binds, 1);
}

// A pod this extender placed is bound again on the version its filter saw (kube-scheduler's
// second cycle, before its update reached the filter): the model's placement refuses the
// guarded path, the read shows the binding, nothing changes.
TEST_F(ExtenderTest, SecondBindOnAnOldFilteredVersionIsRefusedAndChangesNothing) {
  api_.PutNode(GpuNode("n1", 2));
  api_.PutPod(GpuPod("p", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}}));
  const json pod = api_.Pod("default", "p");
  ASSERT_EQ(extender().Filter(FilterArgs(pod, {"n1"})).Json()["nodenames"].size(), 1u);
  ASSERT_EQ(extender().Bind(BindArgs(pod, "n1")).Json()["error"], "");
  const std::string devices = Annotation("p", "hami.io/vgpu-devices-allocated");
  const auto usage = model_.UsageOf("n1", "GPU-n1-0");
  ASSERT_EQ(extender().Filter(FilterArgs(pod, {"n1"})).Json()["nodenames"].size(), 1u);
  VerbResult again = extender().Bind(BindArgs(pod, "n1"));
  EXPECT_NE(again.Json()["error"].get<std::string>().find("already bound to n1"), std::string::npos)
      << again.Json().dump();
  EXPECT_EQ(Annotation("p", "hami.io/vgpu-devices-allocated"), devices);
  EXPECT_EQ(model_.UsageOf("n1", "GPU-n1-0"), usage);
  EXPECT_EQ(model_.UsageOf("n1", "GPU-n1-1"), sched::DeviceUsage{});
  EXPECT_EQ(api_.binds, 1);
}

// A binding that was made although its call failed (a lost reply) is a bind that succeeded: the
// pod keeps its devices in the model and is not marked failed.
TEST_F(ExtenderTest, BindingMadeDespiteAnErrorReplyCountsAsBound) {
  api_.PutNode(GpuNode("n1", 1));
  json pod = GpuPod("p", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}});
  api_.PutPod(pod);
  api_.lose_bind_replies = 1;
  VerbResult r = extender().Bind(BindArgs(pod, "n1"));
  EXPECT_EQ(r.Json()["error"], "") << r.Json().dump();
  EXPECT_EQ(Annotation("p", "hami.io/bind-phase"), "allocating");
  EXPECT_EQ(model_.UsageOf("n1", "GPU-n1-0"), (sched::DeviceUsage{1, 3000, 0}));
  EXPECT_EQ(metrics_.bind_failures.load(), 0u);
}

TEST_F(ExtenderTest, DeletedAndFinishedPodsFreeTheirGpus) {
  api_.PutNode(GpuNode("n1", 1, 10000));
  json a = GpuPod("a", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "6000"}});
  json b = GpuPod("b", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "6000"}});
  api_.PutPod(a);
  api_.PutPod(b);
  ASSERT_EQ(extender().Bind(BindArgs(a, "n1")).Json()["error"], "");
  EXPECT_EQ(extender().Filter(FilterArgs(b, {"n1"})).Json()["nodenames"].size(), 0u);
  json done = api_.Pod("default", "a");
  done["status"]["phase"] = "Succeeded";
  api_.PutPod(done);
  EXPECT_EQ(extender().Filter(FilterArgs(b, {"n1"})).Json()["nodenames"].size(), 1u);
  // A reservation of a pod deleted mid-bind vanishes too.
  ClusterModel::ReserveResult res =
      model_.Reserve("uid-x", "default", "x", "n1", [](const sched::NodeState& s) {
        sched::PodRequest req;
        req.app_containers = {{1, 6000, -1, 0}};
        return sched::FitPod(s.view, req);
      });
  ASSERT_TRUE(res.ok) << res.message;
  EXPECT_EQ(extender().Filter(FilterArgs(b, {"n1"})).Json()["nodenames"].size(), 0u);
  model_.RemovePod(json{{"metadata", {{"uid", "uid-x"}, {"namespace", "default"}, {"name", "x"}}}});
  EXPECT_EQ(extender().Filter(FilterArgs(b, {"n1"})).Json()["nodenames"].size(), 1u);
}

TEST_F(ExtenderTest, StaleLockIsTakenOverAtOnce) {
  json node = GpuNode("n1", 1);
  node["metadata"]["annotations"]["hami.io/mutex.lock"] = "2099-01-01T00:00:00Z,default,gone";
  api_.PutNode(node);
  json failed_owner = GpuPod("owner", {});
  failed_owner["metadata"]["annotations"] = {{"hami.io/bind-phase", "failed"}};
  api_.PutPod(failed_owner);
  json pod = GpuPod("p", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1000"}});
  api_.PutPod(pod);
  // Owner pod does not exist.
  EXPECT_EQ(extender().Bind(BindArgs(pod, "n1")).Json()["error"], "");
  EXPECT_EQ(metrics_.lock_takeovers.load(), 1u);
  // Owner exists but its bind failed.
  json n = api_.Node("n1");
  n["metadata"]["annotations"]["hami.io/mutex.lock"] = "2099-01-01T00:00:00Z,default,owner";
  api_.PutNode(n);
  json q = GpuPod("q", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1000"}});
  api_.PutPod(q);
  EXPECT_EQ(extender().Bind(BindArgs(q, "n1")).Json()["error"], "");
  EXPECT_EQ(metrics_.lock_takeovers.load(), 2u);
}

TEST_F(ExtenderTest, LockOlderThanExpiryIsTakenOverEvenIfOwnerAllocates) {
  // A kubelet restarted between bind and Allocate: the owner stays "allocating" for good.
  const auto old = std::chrono::time_point_cast<std::chrono::seconds>(
      std::chrono::system_clock::now() - std::chrono::seconds(120));
  json node = GpuNode("n1", 1);
  node["metadata"]["annotations"]["hami.io/mutex.lock"] =
      codec::FormatRfc3339(old) + ",default,owner";
  api_.PutNode(node);
  json owner = GpuPod("owner", {});
  owner["metadata"]["annotations"] = {{"hami.io/bind-phase", "allocating"}};
  api_.PutPod(owner);
  json pod = GpuPod("p", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1000"}});
  api_.PutPod(pod);
  EXPECT_EQ(extender().Bind(BindArgs(pod, "n1")).Json()["error"], "");
  EXPECT_EQ(metrics_.lock_takeovers.load(), 1u);
}

// kube-scheduler gives up on a bind after its httpTimeout and binds the pod again while the first
// bind still waits for a node lock: the second bind is refused and writes nothing, and the pod can
// be bound once the first has ended.
TEST_F(ExtenderTest, SecondBindWhileTheFirstRunsIsRefusedAndWritesNothing) {
  options_.lock.wait_timeout = std::chrono::milliseconds(500);
  json locked = GpuNode("n1", 1);
  locked["metadata"]["annotations"]["hami.io/mutex.lock"] = "2099-01-01T00:00:00Z,default,owner";
  api_.PutNode(locked);
  api_.PutNode(GpuNode("n2", 1));
  json owner = GpuPod("owner", {});
  owner["metadata"]["annotations"] = {{"hami.io/bind-phase", "allocating"}};
  api_.PutPod(owner);
  json pod = GpuPod("p", {{"nvidia.com/gpu", "1"}});
  api_.PutPod(pod);
  Extender& ext = extender();

  std::string first_error;
  std::thread first([&] { first_error = ext.Bind(BindArgs(pod, "n1")).Json()["error"]; });
  while (model_.reservation_count() == 0) std::this_thread::yield();  // waiting for n1's lock
  const std::string second = ext.Bind(BindArgs(pod, "n2")).Json()["error"];
  first.join();
  EXPECT_NE(second.find("an earlier bind of this pod is still running"), std::string::npos)
      << second;
  EXPECT_NE(first_error.find("locked by pod default/owner"), std::string::npos) << first_error;
  EXPECT_EQ(api_.binds, 0);
  EXPECT_FALSE(api_.Pod("default", "p")["metadata"].contains("annotations") &&
               api_.Pod("default", "p")["metadata"]["annotations"].contains("hami.io/vgpu-node"));

  EXPECT_EQ(ext.Bind(BindArgs(pod, "n2")).Json()["error"], "");
  EXPECT_EQ(Annotation("p", "hami.io/vgpu-node"), "n2");
  EXPECT_EQ(api_.binds, 1);
}

TEST_F(ExtenderTest, HeldLockTimesOutWithAClearMessage) {
  options_.lock.wait_timeout = std::chrono::milliseconds(50);
  json node = GpuNode("n1", 1);
  node["metadata"]["annotations"]["hami.io/mutex.lock"] = "2099-01-01T00:00:00Z,default,owner";
  api_.PutNode(node);
  json owner = GpuPod("owner", {});
  owner["metadata"]["annotations"] = {{"hami.io/bind-phase", "allocating"}};
  api_.PutPod(owner);
  json pod = GpuPod("p", {{"nvidia.com/gpu", "1"}});
  api_.PutPod(pod);
  VerbResult r = extender().Bind(BindArgs(pod, "n1"));
  const std::string e = r.Json()["error"];
  EXPECT_NE(e.find("locked by pod default/owner"), std::string::npos) << e;
  // The wait watched the model: not a single read of the node from the API server.
  EXPECT_EQ(api_.node_gets, 0);
  EXPECT_EQ(model_.reservation_count(), 0u);
  EXPECT_EQ(api_.binds, 0);
}

// 100 pods bound to one node at once; a fake device plugin finishes each Allocate (releases the
// lock, bind-phase=success). Every bind must succeed, each on its own share of the GPUs.
TEST_F(ExtenderTest, HundredConcurrentBindsToOneNodeAllSucceed) {
  constexpr int kPods = 100;
  json node = GpuNode("n1", 10, 100000);  // 10 GPUs x 10 slots
  api_.PutNode(node);
  std::vector<json> pods;
  for (int i = 0; i < kPods; ++i) {
    pods.push_back(
        GpuPod("p" + std::to_string(i), {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1000"}}));
    api_.PutPod(pods.back());
  }
  std::atomic<bool> stop{false};
  std::atomic<int> allocated{0};
  std::thread device_plugin([&] {
    while (!stop.load()) {
      json n = api_.Node("n1");
      const json& annos = n["metadata"]["annotations"];
      if (annos.contains("hami.io/mutex.lock")) {
        const std::string v = annos["hami.io/mutex.lock"];
        const std::string owner = v.substr(v.rfind(',') + 1);
        json p = api_.Pod("default", owner);
        if (p["metadata"]["annotations"].value("hami.io/bind-phase", "") == "allocating") {
          (void)api_.MergePatchPod(
              "default", owner,
              {{"metadata", {{"annotations", {{"hami.io/bind-phase", "success"}}}}}});
          (void)api_.JsonPatchNode(
              "n1", json::array({{{"op", "remove"},
                                  {"path", "/metadata/annotations/hami.io~1mutex.lock"}}}));
          allocated++;
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  options_.lock.wait_timeout = std::chrono::milliseconds(60000);
  Extender& ext = extender();
  std::vector<std::string> errors(kPods);
  std::vector<std::thread> threads;
  threads.reserve(kPods);
  for (int i = 0; i < kPods; ++i) {
    threads.emplace_back([&, i] {
      json f = ext.Filter(FilterArgs(pods[i], {"n1"})).Json();
      if (f["nodenames"].size() != 1) {
        errors[i] = "filter: " + f.dump();
        return;
      }
      errors[i] = ext.Bind(BindArgs(pods[i], "n1")).Json()["error"];
    });
  }
  for (auto& t : threads) t.join();
  stop = true;
  device_plugin.join();
  for (int i = 0; i < kPods; ++i) EXPECT_EQ(errors[i], "") << "pod " << i;
  EXPECT_EQ(api_.binds, kPods);
  // Every slot of every GPU used exactly once: nothing double-booked.
  for (int g = 0; g < 10; ++g) {
    EXPECT_EQ(model_.UsageOf("n1", "GPU-n1-" + std::to_string(g)),
              (sched::DeviceUsage{10, 10000, 0}))
        << g;
  }
  EXPECT_EQ(model_.reservation_count(), 0u);
  EXPECT_EQ(metrics_.bind.count(), static_cast<uint64_t>(kPods));
}

TEST_F(ExtenderTest, QuotaLimitsNamespaceCharge) {
  api_.PutNode(GpuNode("n1", 4, 40000));
  model_.UpsertQuota(json::parse(R"({"metadata":{"name":"q","namespace":"team"},
      "spec":{"hard":{"limits.nvidia.com/gpumem":"10000"}}})"));
  json first = GpuPod("first", {{"nvidia.com/gpu", "2"}, {"nvidia.com/gpumem", "4000"}}, "team");
  api_.PutPod(first);
  ASSERT_EQ(extender().Bind(BindArgs(first, "n1")).Json()["error"], "");
  json second = GpuPod("second", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "4000"}}, "team");
  VerbResult r = extender().Filter(FilterArgs(second, {"n1"}));
  EXPECT_EQ(r.Json()["nodenames"].size(), 0u);
  EXPECT_NE(r.Json()["failedNodes"]["n1"].get<std::string>().find("ResourceQuotaExceeded"),
            std::string::npos);
  // Another namespace is not affected, and the webhook refuses the same pod up front.
  EXPECT_EQ(
      extender()
          .Filter(FilterArgs(
              GpuPod("other", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "4000"}}), {"n1"}))
          .Json()["nodenames"]
          .size(),
      1u);
  json review = {
      {"apiVersion", "admission.k8s.io/v1"},
      {"kind", "AdmissionReview"},
      {"request",
       {{"uid", "r1"}, {"kind", {{"kind", "Pod"}}}, {"namespace", "team"}, {"object", second}}}};
  VerbResult w = extender().Admit(review);
  EXPECT_FALSE(w.Json()["response"]["allowed"].get<bool>());
  EXPECT_NE(w.Json()["response"]["status"]["message"].get<std::string>().find("quota"),
            std::string::npos);
}

// The webhook decides pod creation and updates. A pod created with the annotations the scheduler
// writes at bind is refused with a message naming them. Updates of them (issue 42: a tenant who may
// patch its pod rewrote what Allocate trusts between the bind and Allocate) pass only from the
// scheduler's and the device plugin's ServiceAccounts; other operations pass untouched.
TEST_F(ExtenderTest, WebhookRefusesSystemAnnotationsOnCreateAndFromTenantsOnUpdate) {
  const std::string scheduler_sa = "system:serviceaccount:vgpu:vgpu-scheduler";
  const std::string plugin_sa = "system:serviceaccount:vgpu:vgpu-device-plugin";
  options_.system_users = {scheduler_sa, plugin_sa};
  json forged = GpuPod("forged", {{"nvidia.com/gpu", "1"}}, "team",
                       {{"hami.io/vgpu-devices-to-allocate", "GPU-a,NVIDIA,80000,100:;"},
                        {"hami.io/bind-phase", "allocating"}});
  const auto review = [&](const char* operation, const std::string& user = "alice",
                          const json& old = GpuPod("forged", {{"nvidia.com/gpu", "1"}}, "team")) {
    json r = {{"apiVersion", "admission.k8s.io/v1"},
              {"request",
               {{"uid", "u"},
                {"kind", {{"kind", "Pod"}}},
                {"object", forged},
                {"userInfo", {{"username", user}}}}}};
    if (operation != nullptr) r["request"]["operation"] = operation;
    if (std::string(operation == nullptr ? "" : operation) == "UPDATE") {
      r["request"]["oldObject"] = old;
    }
    return r;
  };
  for (const char* create : {"CREATE", static_cast<const char*>(nullptr)}) {
    VerbResult r = extender().Admit(review(create));
    ASSERT_EQ(r.http_status, 200);
    const json resp = r.Json()["response"];
    EXPECT_FALSE(resp["allowed"].get<bool>());
    EXPECT_EQ(resp["status"]["code"], 403);
    const std::string message = resp["status"]["message"];
    EXPECT_NE(message.find("annotation hami.io/vgpu-devices-to-allocate"), std::string::npos)
        << message;
    EXPECT_NE(message.find("annotation hami.io/bind-phase"), std::string::npos) << message;
    EXPECT_NE(message.find("--webhook-override-namespaces=team"), std::string::npos) << message;
  }
  {
    // A tenant's update that writes them is refused, naming the user and who may.
    VerbResult r = extender().Admit(review("UPDATE"));
    ASSERT_EQ(r.http_status, 200);
    const json resp = r.Json()["response"];
    ASSERT_FALSE(resp["allowed"].get<bool>()) << resp.dump();
    EXPECT_EQ(resp["status"]["code"], 403);
    const std::string message = resp["status"]["message"];
    EXPECT_NE(message.find("adds annotation hami.io/vgpu-devices-to-allocate"), std::string::npos)
        << message;
    EXPECT_NE(message.find("user alice"), std::string::npos) << message;
    EXPECT_NE(message.find("Only " + scheduler_sa + ", " + plugin_sa + " may"), std::string::npos)
        << message;
    EXPECT_FALSE(resp.contains("patch"));
  }
  for (const std::string& system : {scheduler_sa, plugin_sa}) {
    VerbResult r = extender().Admit(review("UPDATE", system));
    const json resp = r.Json()["response"];
    EXPECT_TRUE(resp["allowed"].get<bool>()) << system << ": " << resp.dump();
    EXPECT_FALSE(resp.contains("patch")) << system;
  }
  // An update that leaves them as they were passes for anyone.
  EXPECT_TRUE(extender().Admit(review("UPDATE", "alice", forged)).Json()["response"]["allowed"]);
  for (const char* other : {"DELETE", "CONNECT"}) {
    VerbResult r = extender().Admit(review(other));
    ASSERT_EQ(r.http_status, 200) << other;
    const json resp = r.Json()["response"];
    EXPECT_TRUE(resp["allowed"].get<bool>()) << other;
    EXPECT_FALSE(resp.contains("patch")) << other;
    EXPECT_EQ(resp["uid"], "u");
  }
  // An admin's allowance reaches the webhook through the extender's options, for both.
  options_.overrides.namespaces = {"team"};
  extender_.reset();
  EXPECT_TRUE(extender().Admit(review("CREATE")).Json()["response"]["allowed"].get<bool>());
  EXPECT_TRUE(extender().Admit(review("UPDATE")).Json()["response"]["allowed"].get<bool>());
}

// issue 42: `nvidia.com/gpumem-percentage: "0"` passed the webhook, was placed as 0 MiB (the
// device plugin then wrote CUDA_DEVICE_MEMORY_LIMIT_0=0m, which libvgpu.so reads as "unlimited")
// and charged nothing to the namespace's quota. Now "0" is HAMi's "unset": the webhook admits it
// with a warning, the bind places the default (here the whole card) and the quota counts it.
TEST_F(ExtenderTest, ZeroMemoryPercentageIsTheDefaultPlacedAndCharged) {
  api_.PutNode(GpuNode("n1", 1, 16384));
  model_.UpsertQuota(json::parse(R"({"metadata":{"name":"q","namespace":"team"},
      "spec":{"hard":{"limits.nvidia.com/gpumem":"20000"}}})"));
  json zero =
      GpuPod("zero", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "0"}}, "team");
  json review = {{"apiVersion", "admission.k8s.io/v1"},
                 {"request",
                  {{"uid", "r"},
                   {"operation", "CREATE"},
                   {"kind", {{"kind", "Pod"}}},
                   {"namespace", "team"},
                   {"object", zero}}}};
  const json resp = extender().Admit(review).Json()["response"];
  EXPECT_TRUE(resp["allowed"].get<bool>()) << resp.dump();
  ASSERT_TRUE(resp.contains("warnings")) << resp.dump();
  EXPECT_NE(resp["warnings"][0].get<std::string>().find("0 means unset"), std::string::npos);

  api_.PutPod(zero);
  ASSERT_EQ(extender().Filter(FilterArgs(zero, {"n1"})).Json()["nodenames"], json({"n1"}));
  ASSERT_EQ(extender().Bind(BindArgs(zero, "n1")).Json()["error"], "");
  const std::string devices =
      api_.Pod("team", "zero")["metadata"]["annotations"]["hami.io/vgpu-devices-to-allocate"];
  EXPECT_EQ(devices, "GPU-n1-0,NVIDIA,16384,0:;");
  // 16384 MiB of the namespace's 20000 are charged: a second such pod no longer fits.
  json second = GpuPod("second", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "4000"}}, "team");
  api_.PutNode(GpuNode("n2", 1, 16384));
  VerbResult r = extender().Filter(FilterArgs(second, {"n2"}));
  EXPECT_EQ(r.Json()["nodenames"].size(), 0u) << r.Text();
  EXPECT_NE(r.Text().find("ResourceQuotaExceeded"), std::string::npos) << r.Text();
}

// Values a pod that skipped the webhook can carry are refused by the filter with the parser's
// message: none of them is placed.
TEST_F(ExtenderTest, FilterRefusesInvalidResourceValues) {
  api_.PutNode(GpuNode("n1", 1, 16384));
  for (const json& limits :
       {json{{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "-1"}}, json{{"nvidia.com/gpu", "0.5"}},
        json{{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "101"}},
        json{{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "99999999999Ei"}}}) {
    json pod = GpuPod("bad", limits);
    VerbResult r = extender().Filter(FilterArgs(pod, {"n1"}));
    EXPECT_EQ(r.Json()["nodenames"].size(), 0u) << limits.dump();
    EXPECT_NE(r.Json()["error"].get<std::string>().find("container \"main\""), std::string::npos)
        << limits.dump() << ": " << r.Text();
  }
}

// --webhook-mode=audit end to end: the review of a pod enforce mode refuses is allowed, carries
// the refusal as a warning (kubectl prints it) and the scheduler's name as a patch, and is counted
// by reason on /metrics with the mode itself; the filter still refuses the pod (audit weakens the
// webhook only, not the scheduler after it).
TEST_F(ExtenderTest, AuditModeAdmitsWithAWarningCountsAndTheFilterStillHolds) {
  api_.PutNode(GpuNode("n1", 1, 16384));
  json bad = GpuPod("bad", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "101"}}, "team");
  bad["spec"].erase("schedulerName");  // as created: the webhook is what names the scheduler
  const json review = {{"apiVersion", "admission.k8s.io/v1"},
                       {"request",
                        {{"uid", "r"},
                         {"operation", "CREATE"},
                         {"kind", {{"kind", "Pod"}}},
                         {"namespace", "team"},
                         {"object", bad}}}};
  // Enforce, the default: refused, nothing counted as audited.
  json resp = extender().Admit(review).Json()["response"];
  EXPECT_FALSE(resp["allowed"].get<bool>());
  const std::string refusal = resp["status"]["message"];
  EXPECT_EQ(metrics_.would_deny(sched::AuditReason::kInvalidValue), 0u);
  EXPECT_NE(metrics_.Render(model_, false).find("vgpu_scheduler_webhook_audit_mode 0"),
            std::string::npos);

  options_.webhook_mode = sched::WebhookMode::kAudit;
  extender_.reset();
  resp = extender().Admit(review).Json()["response"];
  ASSERT_TRUE(resp["allowed"].get<bool>()) << resp.dump();
  ASSERT_TRUE(resp.contains("warnings")) << resp.dump();
  EXPECT_NE(resp["warnings"][0].get<std::string>().find(refusal), std::string::npos) << resp.dump();
  const json patch = json::parse(codec::Base64Decode(resp["patch"].get<std::string>()).value());
  EXPECT_EQ(patch, json::parse(R"([{"op":"add","path":"/spec/schedulerName",
                                    "value":"hami-scheduler"}])"));
  EXPECT_EQ(metrics_.would_deny(sched::AuditReason::kInvalidValue), 1u);
  const std::string page = metrics_.Render(model_, false);
  EXPECT_NE(page.find("vgpu_scheduler_webhook_audit_mode 1"), std::string::npos);
  EXPECT_NE(page.find(R"(vgpu_scheduler_webhook_would_deny_total{reason="invalid-value"} 1)"),
            std::string::npos);
  EXPECT_NE(page.find(R"(vgpu_scheduler_webhook_would_deny_total{reason="quota"} 0)"),
            std::string::npos);

  // The admitted pod reaches the scheduler, which refuses it with the same words.
  bad["spec"]["schedulerName"] = "hami-scheduler";
  VerbResult r = extender().Filter(FilterArgs(bad, {"n1"}));
  EXPECT_EQ(r.Json()["nodenames"].size(), 0u) << r.Text();
  EXPECT_NE(r.Json()["error"].get<std::string>().find("101"), std::string::npos) << r.Text();
}

TEST_F(ExtenderTest, WebhookAnswersBothVersions) {
  options_.core_policy = "force";
  for (const char* version : {"admission.k8s.io/v1", "admission.k8s.io/v1beta1"}) {
    json pod = GpuPod("p", {{"nvidia.com/gpu", "1"}});
    pod["spec"].erase("schedulerName");
    json review = {
        {"apiVersion", version},
        {"kind", "AdmissionReview"},
        {"request",
         {{"uid", "abc"}, {"kind", {{"kind", "Pod"}}}, {"namespace", "default"}, {"object", pod}}}};
    VerbResult r = extender().Admit(review);
    ASSERT_EQ(r.http_status, 200);
    EXPECT_EQ(r.Json()["apiVersion"], version);
    const json resp = r.Json()["response"];
    EXPECT_EQ(resp["uid"], "abc");
    EXPECT_TRUE(resp["allowed"].get<bool>());
    EXPECT_EQ(resp["patchType"], "JSONPatch");
    // The patch is base64 of a JSON patch that sets the scheduler and the whole-card cores.
    const std::string b64 = resp["patch"];
    static const std::string kTable =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string decoded;
    int val = 0, bits = -8;
    for (char c : b64) {
      if (c == '=') break;
      val = (val << 6) + static_cast<int>(kTable.find(c));
      bits += 6;
      if (bits >= 0) {
        decoded.push_back(static_cast<char>((val >> bits) & 0xFF));
        bits -= 8;
      }
    }
    json patch = json::parse(decoded);
    json patched = pod.patch(patch);
    EXPECT_EQ(patched["spec"]["schedulerName"], "hami-scheduler");
    EXPECT_EQ(patched["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpucores"],
              "100");
    EXPECT_EQ(patched["spec"]["containers"][0]["env"][0]["name"], "GPU_CORE_UTILIZATION_POLICY");
  }
  json privileged = GpuPod("priv", {{"nvidia.com/gpu", "1"}});
  privileged["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};
  VerbResult d = extender().Admit(
      {{"apiVersion", "admission.k8s.io/v1"},
       {"request", {{"uid", "u"}, {"kind", {{"kind", "Pod"}}}, {"object", privileged}}}});
  EXPECT_FALSE(d.Json()["response"]["allowed"].get<bool>());
  EXPECT_EQ(d.Json()["response"]["status"]["code"], 403);
  EXPECT_EQ(metrics_.webhook_denied.load(), 1u);
}

}  // namespace
}  // namespace vgpu::scheduler
