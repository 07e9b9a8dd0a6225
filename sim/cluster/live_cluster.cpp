#include "sim/cluster/live_cluster.h"

#include <stdlib.h>

#include <filesystem>
#include <set>
#include <thread>

#include "core/base/log.h"
#include "sim/cluster/snapshot.h"

namespace vgpu::sim {

namespace {

using nlohmann::json;

Result<std::string> MakeTempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "vgpu-sim-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return Internal("cannot create a temporary directory under " +
                    std::filesystem::temp_directory_path().string());
  }
  return tmpl;
}

}  // namespace

Result<std::unique_ptr<LiveCluster>> LiveCluster::Start(const Scenario& sc,
                                                        const PolicyPair& policy,
                                                        const RunOptions& o) {
  if (!o.extender) return InvalidArgument("no extender factory given to the simulation");
  // The components log (core/base/log.h) to stderr, so stdout keeps the report or the --json
  // document alone. They log every start, registration and Allocate at info level; a simulation
  // of thousands of them keeps only warnings unless asked.
  if (!o.component_logs) log::SetThreshold(log::Level::kWarn);
  std::unique_ptr<LiveCluster> c(new LiveCluster());
  auto dir = MakeTempDir();
  if (!dir.ok()) return dir.status();
  c->dir_ = *dir;

  ApiServerOptions api_options;
  api_options.history_limit = 1 << 20;
  auto api = ApiServer::Start(api_options);
  if (!api.ok()) return api.status().WithContext("starting the in-process API server");
  c->api_ = std::move(*api);

  kube::ClientConfig cfg;
  cfg.server = c->api_->url();
  cfg.qps = 0;  // the simulation measures the system, not a client-side throttle
  cfg.max_idle_connections = 64;
  cfg.user_agent = "vgpu-device-plugin (sim)";
  auto client = kube::Client::New(cfg);
  if (!client.ok()) return client.status();
  c->client_ = std::shared_ptr<kube::Client>(std::move(*client));

  std::set<std::string> namespaces;
  for (const PodSpec& p : sc.pods) namespaces.insert(p.ns);
  for (const QuotaSpec& q : sc.quotas) namespaces.insert(q.ns);
  for (const std::string& ns : namespaces) {
    if (c->api_->Get("namespaces", "", ns).ok()) continue;
    auto r = c->api_->Seed(
        "namespaces", {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
    if (!r.ok()) return r.status().WithContext("creating namespace " + ns);
  }

  std::map<std::string, SimNode*> by_name;
  for (const NodeSpec& spec : sc.nodes) {
    SimNodeOptions no;
    no.dir = c->dir_ + "/" + spec.name;
    no.mode = o.plugins;
    no.split_count = sc.split_count;
    no.client = c->client_;
    auto node = SimNode::Start(spec, *c->api_, no);
    if (!node.ok()) return node.status();
    by_name[spec.name] = node->get();
    c->node_names_.push_back(spec.name);
    c->nodes_.push_back(std::move(*node));
  }

  std::set<std::string> quota_namespaces;
  for (const QuotaSpec& q : sc.quotas) {
    json hard = json::object();
    for (const auto& [key, value] : q.hard) hard[key] = value;
    auto r = c->api_->Seed("resourcequotas", {{"apiVersion", "v1"},
                                              {"kind", "ResourceQuota"},
                                              {"metadata", {{"name", q.name}, {"namespace", q.ns}}},
                                              {"spec", {{"hard", hard}}}});
    if (!r.ok()) return r.status().WithContext("creating ResourceQuota " + q.ns + "/" + q.name);
    quota_namespaces.insert(q.ns);
  }

  ExtenderSetup setup{c->api_->url(),
                      policy,
                      o.scheduler_name,
                      o.defaults,
                      {quota_namespaces.begin(), quota_namespaces.end()}};
  auto extender = o.extender(setup);
  if (!extender.ok()) return extender.status().WithContext("starting the extender");
  c->extender_ = std::move(*extender);
  auto http = ExtenderClient::Connect(c->extender_->url());
  if (!http.ok()) return http.status();
  c->http_ = std::move(*http);
  VGPU_RETURN_IF_ERROR(c->WaitExtenderSeesNodes(policy, o));
  c->hub_ = std::make_unique<KubeletHub>(*c->api_, by_name, o.kubelet_workers);
  return c;
}

// The extender learns nodes from its watch; scheduling starts once a filter of a tiny pod finds
// every node feasible (kube-scheduler likewise waits for its caches to sync).
Status LiveCluster::WaitExtenderSeesNodes(const PolicyPair& policy, const RunOptions& o) {
  PodSpec probe_spec;
  probe_spec.name = "vgpu-sim-readiness-probe";
  probe_spec.gpus = 1;
  probe_spec.mem_mib = 1;
  probe_spec.cores = 0;
  json probe = PodObject(probe_spec, policy);
  probe["metadata"]["uid"] = "vgpu-sim-probe";
  probe["spec"]["schedulerName"] = o.scheduler_name;
  const auto deadline = std::chrono::steady_clock::now() + o.startup_timeout;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    auto f = http_->Filter(probe, node_names_);
    if (f.ok() && f->feasible.size() == node_names_.size()) return Status::Ok();
    last = f.ok() ? std::to_string(f->feasible.size()) + "/" + std::to_string(node_names_.size()) +
                        " nodes ready" + (f->error.empty() ? "" : ", error: " + f->error)
                  : f.status().ToString();
    if (f.ok() && !f->failed.empty())
      last += " (e.g. " + f->failed.begin()->first + ": " + f->failed.begin()->second + ")";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return DeadlineExceeded("the extender did not see every node's GPUs in time: " + last);
}

LiveCluster::~LiveCluster() {
  Stop();
}

void LiveCluster::Stop() {
  // Kubelets first (they call the plugins), then the extender, the plugins, and the API server
  // last: everyone else is its client.
  if (hub_) hub_->Stop();
  http_.reset();
  extender_.reset();
  nodes_.clear();
  hub_.reset();
  if (api_) api_->Stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }
}

Result<std::unique_ptr<ExtenderClient>> LiveCluster::NewExtenderClient() const {
  return ExtenderClient::Connect(extender_->url());
}

Result<ClusterSnapshot> LiveCluster::Snapshot(const RequestDefaults& defaults) {
  const ListResult nodes = api_->store().List(*FindResource("v1", "nodes"), "");
  const ListResult pods = api_->store().List(*FindResource("v1", "pods"), "");
  return SnapshotFromObjects(nodes.items, pods.items, defaults);
}

}  // namespace vgpu::sim
