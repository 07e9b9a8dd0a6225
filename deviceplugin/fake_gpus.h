#pragma once

// `--fake-gpus count=4,memory=81559,model=NVIDIA H100 80GB HBM3,uuids=GPU-a;GPU-b,numa=0,
// topology=0-1=node+nv4,2-3=node+nv4,*=system`: GPUs described on the command line, for machines
// without GPUs (CI, the simulated cluster).

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "deviceplugin/gpu_backend.h"

namespace vgpu::deviceplugin {

// Parses the flag. Keys: count (required unless uuids given), memory (MiB, default 81559),
// model (default "NVIDIA H100 80GB HBM3"), uuids (';' or '|' separated; default
// GPU-fake-<node>-<i>, unique per node in a simulated cluster),
// numa (default 0), topology (codec::ParseTopologySpec: "default" or pairs such as
// 0-1=node+nv4,*=system; none by default: no pair scores), faults (an absolute folder: while a
// file <folder>/<uuid> exists that GPU does not answer the health probe, so the plugin reports
// it unhealthy and it recovers once the file is gone; how the e2e breaks a GPU of a plugin that
// runs in a pod). A value runs to the next ",<key>=", so model names and topologies may contain
// commas.
struct FakeGpus {
  std::vector<GpuDevice> gpus;
  std::optional<codec::GpuTopology> topology;
  std::string faults_dir;
};
Result<FakeGpus> ParseFakeGpuSpec(const std::string& spec, const std::string& node);
// The GPUs alone.
Result<std::vector<GpuDevice>> ParseFakeGpus(const std::string& spec, const std::string& node);

class FakeGpuBackend : public GpuBackend {
 public:
  explicit FakeGpuBackend(std::vector<GpuDevice> gpus,
                          std::optional<codec::GpuTopology> topology = std::nullopt)
      : gpus_(std::move(gpus)), topology_(std::move(topology)) {}
  explicit FakeGpuBackend(FakeGpus fake)
      : FakeGpuBackend(std::move(fake.gpus), std::move(fake.topology)) {
    faults_dir_ = std::move(fake.faults_dir);
  }

  Result<std::vector<GpuDevice>> Discover() override { return gpus_; }
  Result<std::optional<codec::GpuTopology>> Topology() override { return topology_; }
  Result<std::optional<XidEvent>> WaitXid(std::chrono::milliseconds timeout) override;
  bool Responds(const std::string& uuid) override;

  // Test and simulation hooks: deliver an XID; make a GPU stop (or resume) answering (as a file
  // in the faults folder does).
  void InjectXid(XidEvent e);
  void SetResponding(const std::string& uuid, bool responds);

 private:
  std::vector<GpuDevice> gpus_;
  std::optional<codec::GpuTopology> topology_;
  std::string faults_dir_;  // "" = none
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<XidEvent> events_;
  std::set<std::string> silent_;
};

}  // namespace vgpu::deviceplugin
