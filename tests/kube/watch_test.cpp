#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "tests/kube/test_server.h"

namespace vgpu::kube {
namespace {

using nlohmann::json;

// Collects what a watcher delivers; waits by condition (never by elapsed time assertions).
class Recorder {
 public:
  WatchHandlers Handlers() {
    WatchHandlers h;
    h.on_event = [this](const WatchEvent& ev) {
      std::lock_guard lock(mu_);
      std::string name = ev.object["metadata"]["name"];
      const char* t = ev.type == EventType::kAdded      ? "ADDED"
                      : ev.type == EventType::kModified ? "MODIFIED"
                                                        : "DELETED";
      events_.push_back(std::string(t) + " " + name);
      cv_.notify_all();
    };
    h.on_list = [this](const json& list) {
      std::lock_guard lock(mu_);
      std::vector<std::string> names;
      for (const auto& i : list["items"]) names.push_back(i["metadata"]["name"]);
      lists_.push_back(names);
      cv_.notify_all();
    };
    return h;
  }
  // Waits (bounded, generous) until `pred` holds; re-checks often because some predicates look
  // at server state that does not notify us.
  bool WaitFor(const std::function<bool()>& pred) {
    std::unique_lock lock(mu_);
    for (int i = 0; i < 2000; ++i) {
      if (cv_.wait_for(lock, std::chrono::milliseconds(10), pred)) return true;
    }
    return false;
  }
  size_t event_count() { return events_.size(); }
  std::vector<std::string> events_;
  std::vector<std::vector<std::string>> lists_;
  std::mutex mu_;
  std::condition_variable cv_;
};

TEST_F(ClientFixture, WatchListsThenStreamsEvents) {
  ASSERT_TRUE(client_->Create(kPods, "default", Pod("before")).ok());
  Recorder rec;
  auto w = client_->Watch(kPods, "default", {}, rec.Handlers());
  ASSERT_TRUE(rec.WaitFor([&] { return rec.lists_.size() == 1; }));
  EXPECT_EQ(rec.lists_[0], std::vector<std::string>{"before"});
  ASSERT_TRUE(client_->Create(kPods, "default", Pod("p1")).ok());
  ASSERT_TRUE(client_->PatchAnnotations(kPods, "default", "p1", {{"a", "b"}}).ok());
  ASSERT_TRUE(client_->Delete(kPods, "default", "p1").ok());
  ASSERT_TRUE(client_
                  ->Create(kPods, "other",
                           [] {
                             json p = Pod("elsewhere");
                             p["metadata"]["namespace"] = "other";
                             return p;
                           }())
                  .ok());
  ASSERT_TRUE(rec.WaitFor([&] { return rec.events_.size() >= 3; }));
  w->Stop();
  EXPECT_EQ(rec.events_, (std::vector<std::string>{"ADDED p1", "MODIFIED p1", "DELETED p1"}));
  EXPECT_EQ(w->lists(), 1);
}

// Objects carry what tenants wrote: one nested deeper than any Kubernetes object (128 levels,
// core/codec/bounded_json.h) is refused by the client's answers and skipped by a watch, with an
// error that says so; the events after it flow.
TEST_F(ClientFixture, ObjectsNestedTooDeepAreRefusedAndSkippedByTheWatch) {
  Recorder rec;
  WatchHandlers h = rec.Handlers();
  std::vector<std::string> errors;
  h.on_error = [&](const Status& s) {
    std::lock_guard lock(rec.mu_);
    errors.push_back(s.message());
  };
  auto w = client_->Watch(kPods, "default", {}, h);
  ASSERT_TRUE(rec.WaitFor([&] { return rec.lists_.size() == 1; }));
  json deep = Pod("deep");
  deep["spec"]["extra"] = json::parse(std::string(200, '[') + std::string(200, ']'));
  auto created = client_->Create(kPods, "default", deep);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(created.status().message().find("deeper than 128 levels"), std::string::npos)
      << created.status().message();
  EXPECT_EQ(client_->Get(kPods, "default", "deep").status().code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(client_->Create(kPods, "default", Pod("after")).ok());
  ASSERT_TRUE(rec.WaitFor([&] { return !rec.events_.empty(); }));
  w->Stop();
  EXPECT_EQ(rec.events_, std::vector<std::string>{"ADDED after"});
  std::lock_guard lock(rec.mu_);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            "watch pods: watch event nests arrays and objects deeper than 128 levels, the limit "
            "for one document");
}

TEST_F(ClientFixture, WatchResumesAfterServerDisconnectWithoutLoss) {
  Recorder rec;
  auto w = client_->Watch(kNodes, "", {}, rec.Handlers());
  ASSERT_TRUE(rec.WaitFor([&] { return rec.lists_.size() == 1; }));
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(rec.WaitFor([&] { return server_->active_watches() == 1; }));
    server_->DisconnectWatches();
    // Changes made while the watcher is reconnecting must still arrive, exactly once.
    std::string name = "n" + std::to_string(round);
    ASSERT_TRUE(client_->Create(kNodes, "", {{"metadata", {{"name", name}}}}).ok());
    ASSERT_TRUE(rec.WaitFor([&] { return rec.events_.size() == size_t(round + 1); }));
  }
  w->Stop();
  EXPECT_EQ(rec.events_, (std::vector<std::string>{"ADDED n0", "ADDED n1", "ADDED n2"}));
  EXPECT_EQ(w->lists(), 1);  // resumed from the resourceVersion, no relist
  EXPECT_GE(w->reconnects(), 3);
  EXPECT_GE(server_->watch_requests(), 4);
}

TEST_F(ClientFixture, WatchRelistsOnGone) {
  ASSERT_TRUE(client_->Create(kNodes, "", {{"metadata", {{"name", "a"}}}}).ok());
  Recorder rec;
  auto w = client_->Watch(kNodes, "", {}, rec.Handlers());
  ASSERT_TRUE(rec.WaitFor([&] { return rec.lists_.size() == 1; }));
  ASSERT_TRUE(rec.WaitFor([&] { return server_->active_watches() == 1; }));
  // While disconnected, history is compacted past the watcher's resourceVersion.
  server_->DisconnectWatches();
  ASSERT_TRUE(client_->Create(kNodes, "", {{"metadata", {{"name", "b"}}}}).ok());
  server_->CompactHistory();
  ASSERT_TRUE(rec.WaitFor([&] { return rec.lists_.size() == 2; }));
  EXPECT_EQ(rec.lists_[1], (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(client_->Create(kNodes, "", {{"metadata", {{"name", "c"}}}}).ok());
  ASSERT_TRUE(rec.WaitFor([&] { return !rec.events_.empty() && rec.events_.back() == "ADDED c"; }));
  w->Stop();
  EXPECT_EQ(w->lists(), 2);
}

TEST_F(ClientFixture, WatchFromResourceVersionWithSelectorAndErrorsRetried) {
  auto a = client_->Create(kPods, "default", Pod("a", "", {{"app", "x"}}));
  ASSERT_TRUE(a.ok());
  WatchOptions opts;
  opts.resource_version = (*a)["metadata"]["resourceVersion"];
  opts.label_selector = "app=x";
  opts.min_backoff = std::chrono::milliseconds(1);
  Recorder rec;
  std::atomic<int> errors{0};
  WatchHandlers h = rec.Handlers();
  h.on_error = [&](const Status&) { ++errors; };
  server_->FailNextRequests(2, 503);
  auto w = client_->Watch(kPods, "default", opts, h);
  // The two failures are consumed by the watcher's first attempts, which it retries.
  ASSERT_TRUE(rec.WaitFor([&] { return errors.load() == 2 && server_->active_watches() == 1; }));
  ASSERT_TRUE(client_->Create(kPods, "default", Pod("b", "", {{"app", "y"}})).ok());
  ASSERT_TRUE(client_->Create(kPods, "default", Pod("c", "", {{"app", "x"}})).ok());
  ASSERT_TRUE(rec.WaitFor([&] { return rec.events_.size() == 1; }));
  w->Stop();
  EXPECT_EQ(rec.events_, std::vector<std::string>{"ADDED c"});
  EXPECT_TRUE(rec.lists_.empty());  // started from a resourceVersion: no list
  EXPECT_EQ(errors.load(), 2);
}

TEST_F(ClientFixture, StopIsPromptAndClean) {
  Recorder rec;
  auto w = client_->Watch(kPods, "", {}, rec.Handlers());
  ASSERT_TRUE(rec.WaitFor([&] { return server_->active_watches() == 1; }));
  w->Stop();
  w->Stop();  // idempotent
  w.reset();
  // The server notices the closed stream at its next heartbeat and frees the thread.
  ASSERT_TRUE(rec.WaitFor([&] { return server_->active_watches() == 0; }));
}

}  // namespace
}  // namespace vgpu::kube
