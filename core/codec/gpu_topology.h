#pragma once

// From what NVML says about a node's GPU interconnect to the pair scores of
// `hami.io/node-nvidia-score` (pair_scores.h), computed as HAMi's device plugin computes them
// (pkg/device/nvidia/links.go, calculate_score.go):
//  - the PCIe path of a pair (nvmlDeviceGetTopologyCommonAncestor) scores
//    internal (same board) 60, single switch 50, multiple switches 40, host bridge 30,
//    NUMA node 20, system 10; an unknown level adds no link;
//  - NVLink: the GPU's enabled links (nvmlDeviceGetNvLinkState) whose remote PCI bus id
//    (nvmlDeviceGetNvLinkRemotePciInfo) is the peer's; when there is none but the GPU has enabled
//    links and both GPUs reach NVSwitches (nvmlDeviceGetNvLinkRemoteDeviceType), the smaller of
//    the two switch-link counts; 1-18 links score 100 each, other counts add no link;
//  - a pair whose two directions see a different number of links (a PCIe path one way only, an
//    NVLink one way only) scores 0 both ways (HAMi warns of an NVLink fault).
// Also the topology description shared by `--fake-gpus ...,topology=` and the fake driver's
// VGPU_FAKE_TOPOLOGY (docs/fake-driver.md).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/codec/pair_scores.h"

namespace vgpu::codec {

// nvmlGpuTopologyLevel_t values.
inline constexpr int kTopologyInternal = 0;
inline constexpr int kTopologySingle = 10;
inline constexpr int kTopologyMultiple = 20;
inline constexpr int kTopologyHostBridge = 30;
inline constexpr int kTopologyNode = 40;
inline constexpr int kTopologySystem = 50;
inline constexpr int kTopologyUnknown = -1;  // NVML failed or gave another value
inline constexpr int kMaxNvLinks = 18;       // NVML_NVLINK_MAX_LINKS
// Points per NVLink of a pair. A PCIe path scores at most 60, so a pair scoring this much or more
// has an NVLink between its GPUs (what `vgpu sim` counts as NVLinked).
inline constexpr int64_t kNvLinkPoints = 100;

struct TopologyGpu {
  std::string uuid;
  std::string bus_id;  // nvmlPciInfo_t.busId
  // Remote PCI bus ids of the GPU's enabled NVLinks, one per link (a peer GPU's, or a switch's).
  std::vector<std::string> nvlink_remote_bus_ids;
  int nvswitch_links = 0;  // enabled links whose remote end is an NVSwitch
};

struct GpuTopology {
  std::vector<TopologyGpu> gpus;  // the device list's order
  // pcie_level[i][j]: common-ancestor level from GPU i to GPU j (kTopology*); i != j.
  std::vector<std::vector<int>> pcie_level;
};

// HAMi's bus id form: lower case, a leading "0000" of NVML's 8-digit domain dropped
// ("00000000:19:00.0" -> "0000:19:00.0").
std::string NormalizeBusId(std::string_view bus_id);

// NVLinks from `from` to `to` as HAMi counts them (direct, else through NVSwitches).
int NvLinksBetween(const TopologyGpu& from, const TopologyGpu& to);

// Score of the pair (i, j) as seen from i; `asymmetric` is set when the two directions disagree.
int64_t PairScore(const GpuTopology& topology, size_t i, size_t j, bool* asymmetric);

// The annotation's entries for every GPU (the topology's order); `asymmetric` gets the pairs
// (i < j) scored 0 for disagreeing directions.
DevicePairScores ScoreTopology(const GpuTopology& topology,
                               std::vector<std::pair<size_t, size_t>>* asymmetric = nullptr);

// The part of `topology` covering `uuids`, in that order (the GPUs the node registers); UUIDs
// the topology lacks are left out.
GpuTopology SelectGpus(const GpuTopology& topology, const std::vector<std::string>& uuids);

// A described topology for GPUs without NVML (`--fake-gpus`, the fake driver): comma list of
// `<i>-<j>=<link>` and `*=<link>` (every pair not named), <link> = a PCIe level (internal,
// single, multiple, hostbridge, node, system) and/or nv<N> (N direct NVLinks, 1-18) joined by
// '+', parts left out taken from `*` (default system, no NVLink); "default" = the fake driver's
// default (GPUs 2k and 2k+1 node+nv4, every other pair system). GPU i gets bus id
// 00000000:<0x18+i>:00.0 (the fake driver's). InvalidArgument naming the bad entry.
Result<GpuTopology> ParseTopologySpec(std::string_view spec, const std::vector<std::string>& uuids);

}  // namespace vgpu::codec
