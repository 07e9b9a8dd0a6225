#include "scheduler/node_lock.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "core/codec/annotations.h"
#include "core/codec/node_lock.h"
#include "core/sched/webhook_mutation.h"

namespace vgpu::scheduler {

using nlohmann::json;
namespace anno = vgpu::annotations;

namespace {

const std::string& LockPath() {
  static const std::string path =
      "/metadata/annotations/" + sched::JsonPointerEscape(std::string(anno::kNodeLock));
  return path;
}

std::optional<std::string> LockOf(const json& node, bool* has_annotations) {
  *has_annotations = false;
  auto m = node.find("metadata");
  if (m == node.end() || !m->is_object()) return std::nullopt;
  auto a = m->find("annotations");
  if (a == m->end() || !a->is_object()) return std::nullopt;
  *has_annotations = true;
  auto l = a->find(std::string(anno::kNodeLock));
  if (l == a->end() || !l->is_string()) return std::nullopt;
  return l->get<std::string>();
}

std::string ResourceVersionOf(const json& node) {
  auto m = node.find("metadata");
  if (m == node.end() || !m->is_object()) return "";
  auto rv = m->find("resourceVersion");
  return rv != m->end() && rv->is_string() ? rv->get<std::string>() : "";
}

}  // namespace

bool NodeLocker::OwnerDone(const std::string& ns, const std::string& pod) {
  Result<json> p = api_.GetPod(ns, pod);
  if (!p.ok()) return p.status().code() == StatusCode::kNotFound;
  const json& obj = *p;
  if (obj.contains("metadata") && obj["metadata"].is_object() &&
      obj["metadata"].contains("deletionTimestamp")) {
    return true;
  }
  if (obj.contains("status") && obj["status"].is_object()) {
    const json& phase = obj["status"].value("phase", json());
    if (phase == "Succeeded" || phase == "Failed") return true;
  }
  if (obj.contains("metadata") && obj["metadata"].is_object() &&
      obj["metadata"].contains("annotations") && obj["metadata"]["annotations"].is_object()) {
    const json& a = obj["metadata"]["annotations"];
    auto bp = a.find(std::string(anno::kBindPhase));
    if (bp != a.end() && bp->is_string()) {
      const std::string v = bp->get<std::string>();
      return v == anno::kBindPhaseFailed || v == anno::kBindPhaseSuccess;
    }
  }
  return false;
}

Status NodeLocker::Acquire(const std::string& node, const std::string& ns, const std::string& pod,
                           int* takeovers) {
  const auto deadline = std::chrono::steady_clock::now() + options_.wait_timeout;
  auto poll = options_.poll_min;
  std::string holder;
  bool try_cached_view = static_cast<bool>(unlocked_at_);
  while (true) {
    if (held_ && held_(node, ns, pod, &holder)) {
      if (std::chrono::steady_clock::now() + poll >= deadline) break;
      std::this_thread::sleep_for(poll);
      poll = std::min(poll * 2, options_.poll_max);
      continue;
    }
    if (std::exchange(try_cached_view, false)) {
      if (std::optional<std::string> rv = unlocked_at_(node); rv && !rv->empty()) {
        codec::NodeLock mine{std::chrono::time_point_cast<std::chrono::seconds>(now_()), ns, pod};
        // Adding to a node without annotations fails (InvalidArgument): read it below.
        json ops = json::array(
            {{{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", *rv}},
             {{"op", "add"}, {"path", LockPath()}, {"value", codec::EncodeNodeLock(mine)}}});
        Status s = api_.JsonPatchNode(node, ops);
        if (s.ok()) return s;
        if (s.code() != StatusCode::kFailedPrecondition &&
            s.code() != StatusCode::kInvalidArgument) {
          return s.WithContext("taking the lock of node " + node);
        }
      }
    }
    Result<json> n = api_.GetNode(node);
    if (!n.ok()) return n.status().WithContext("reading node " + node + " to take its lock");
    bool has_annotations = false;
    const std::optional<std::string> current = LockOf(*n, &has_annotations);
    const std::string rv = ResourceVersionOf(*n);
    codec::NodeLock mine{std::chrono::time_point_cast<std::chrono::seconds>(now_()), ns, pod};
    const std::string value = codec::EncodeNodeLock(mine);
    json ops = json::array();
    if (!rv.empty())
      ops.push_back({{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", rv}});

    bool take = false;
    if (!current) {
      take = true;
      if (has_annotations) {
        ops.push_back({{"op", "add"}, {"path", LockPath()}, {"value", value}});
      } else {
        ops.push_back({{"op", "add"},
                       {"path", "/metadata/annotations"},
                       {"value", {{std::string(anno::kNodeLock), value}}}});
      }
    } else {
      Result<codec::NodeLock> held = codec::DecodeNodeLock(*current);
      bool stale = !held.ok();  // unreadable: nobody can release it properly
      if (held.ok()) {
        if (held->pod_namespace == ns && held->pod_name == pod) return Status::Ok();  // a retry
        holder = held->has_owner() ? held->pod_namespace + "/" + held->pod_name : "unknown owner";
        stale = now_() - held->time > options_.stale_after ||
                (held->has_owner() && OwnerDone(held->pod_namespace, held->pod_name));
      }
      if (stale) {
        take = true;
        ops.push_back({{"op", "replace"}, {"path", LockPath()}, {"value", value}});
      }
    }
    if (take) {
      Status s = api_.JsonPatchNode(node, ops);
      if (s.ok()) {
        if (current && takeovers) ++*takeovers;
        return s;
      }
      if (s.code() != StatusCode::kFailedPrecondition && s.code() != StatusCode::kInvalidArgument) {
        return s.WithContext("taking the lock of node " + node);
      }
      // Lost a race (resourceVersion moved): look again at once.
      poll = options_.poll_min;
      if (std::chrono::steady_clock::now() >= deadline) break;
      continue;
    }
    if (std::chrono::steady_clock::now() + poll >= deadline) break;
    std::this_thread::sleep_for(poll);
    poll = std::min(poll * 2, options_.poll_max);
  }
  return DeadlineExceeded("node " + node + " is locked by pod " + holder +
                          " (its device plugin has not finished Allocate); waited " +
                          std::to_string(options_.wait_timeout.count()) +
                          " ms, kube-scheduler will retry");
}

Status NodeLocker::Release(const std::string& node, const std::string& ns, const std::string& pod) {
  Result<json> n = api_.GetNode(node);
  if (!n.ok()) return n.status();
  bool has_annotations = false;
  const std::optional<std::string> current = LockOf(*n, &has_annotations);
  if (!current) return Status::Ok();
  Result<codec::NodeLock> held = codec::DecodeNodeLock(*current);
  if (!held.ok() || held->pod_namespace != ns || held->pod_name != pod) return Status::Ok();
  json ops = json::array({{{"op", "test"}, {"path", LockPath()}, {"value", *current}},
                          {{"op", "remove"}, {"path", LockPath()}}});
  Status s = api_.JsonPatchNode(node, ops);
  if (s.code() == StatusCode::kFailedPrecondition) return Status::Ok();  // no longer ours
  return s;
}

}  // namespace vgpu::scheduler
