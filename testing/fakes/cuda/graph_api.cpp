// CUDA graphs: built from kernel / memory-allocation / memory-free nodes or by stream capture;
// a launch replays the nodes in order in the launching stream's context. An allocation node
// charges its memory at launch (like cuMemAllocAsync); its address is fixed when the node is
// created.

#include "driver_state.h"
#include "kernel_queue.h"

using namespace vgpu::fake;

namespace {

CUresult AddNode(CUgraphNode* out, CUgraph g, std::unique_ptr<CUgraphNode_st> node) {
  if (!Has(D().graphs, g)) return CUDA_ERROR_INVALID_VALUE;
  *out = node.get();
  g->nodes.push_back(std::move(node));
  return CUDA_SUCCESS;
}

template <typename Params>
CUresult AddKernelNode(CUgraphNode* phGraphNode, CUgraph g, const Params* p) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (phGraphNode == nullptr || p == nullptr || p->func == nullptr || p->gridDimX == 0 ||
      p->gridDimY == 0 || p->gridDimZ == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto node = std::make_unique<CUgraphNode_st>();
  node->kind = CUgraphNode_st::Kind::kKernel;
  const unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
  const unsigned block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
  node->kernel = MakeKernelSpec(grid, block, p->kernelParams);
  return AddNode(phGraphNode, g, std::move(node));
}

// Replays nodes from `*next` on; stops with kQueueFull (and `*next` at the node to retry) when
// the context's queue is full.
CUresult ReplayFrom(CUgraphExec exec, CUstream h, bool per_thread, size_t* next,
                    uint32_t* correlation_id) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (!Has(D().graph_execs, exec)) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (auto rc = ResolveStream(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (*correlation_id == 0) *correlation_id = NextCorrelationId();
  for (; *next < exec->nodes.size(); ++*next) {
    const auto& node = exec->nodes[*next];
    switch (node.kind) {
      case CUgraphNode_st::Kind::kKernel:
        if (auto rc = EnqueueKernel(s, node.kernel, *correlation_id); rc != CUDA_SUCCESS) return rc;
        break;
      case CUgraphNode_st::Kind::kMemAlloc: {
        if (D().allocations.contains(node.dptr)) return CUDA_ERROR_INVALID_VALUE;  // not freed
        if (auto rc = Charge(node.physical, node.bytes); rc != CUDA_SUCCESS) return rc;
        D().allocations[node.dptr] =
            Allocation{node.bytes, node.physical, nullptr, AllocKind::kGraph, nullptr};
        break;
      }
      case CUgraphNode_st::Kind::kMemFree:
        if (auto rc = FreeAllocation(node.dptr); rc != CUDA_SUCCESS) return rc;
        break;
    }
  }
  return CUDA_SUCCESS;
}

CUresult GraphLaunch(CUgraphExec exec, CUstream h, bool per_thread) {
  size_t next = 0;
  uint32_t correlation_id = 0;  // one for the launch, shared by its kernels (as CUPTI reports)
  for (;;) {
    const CUresult rc = ReplayFrom(exec, h, per_thread, &next, &correlation_id);
    if (rc != kQueueFull) return rc;
    WaitForQueueSpace();
  }
}

CUresult Instantiate(CUgraphExec* phGraphExec, CUgraph g) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (phGraphExec == nullptr || !Has(D().graphs, g)) return CUDA_ERROR_INVALID_VALUE;
  auto exec = std::make_unique<CUgraphExec_st>();
  for (const auto& node : g->nodes) exec->nodes.push_back(*node);
  *phGraphExec = Adopt(D().graph_execs, std::move(exec));
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (phGraph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  *phGraph = Adopt(D().graphs, std::make_unique<CUgraph_st>());
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph g) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (!Has(D().graphs, g)) return CUDA_ERROR_INVALID_VALUE;
  D().graphs.erase(g);
  return CUDA_SUCCESS;
}

CUresult cuGraphAddKernelNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph,
                                 const CUgraphNode* /*deps*/, size_t /*numDeps*/,
                                 const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  return AddKernelNode(phGraphNode, hGraph, nodeParams);
}
CUresult cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* /*deps*/,
                              size_t /*numDeps*/, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return AddKernelNode(phGraphNode, hGraph, nodeParams);
}

CUresult cuGraphAddMemAllocNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                const CUgraphNode* /*deps*/, size_t /*numDeps*/,
                                CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (phGraphNode == nullptr || nodeParams == nullptr || nodeParams->bytesize == 0 ||
      nodeParams->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      CheckDevice(nodeParams->poolProps.location.id) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto node = std::make_unique<CUgraphNode_st>();
  node->kind = CUgraphNode_st::Kind::kMemAlloc;
  node->bytes = nodeParams->bytesize;
  node->physical = PhysicalOf(nodeParams->poolProps.location.id);
  node->dptr = ReserveAddress(node->bytes, kAllocAlignment);
  nodeParams->dptr = node->dptr;
  return AddNode(phGraphNode, hGraph, std::move(node));
}

CUresult cuGraphAddMemFreeNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                               const CUgraphNode* /*deps*/, size_t /*numDeps*/, CUdeviceptr dptr) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (phGraphNode == nullptr || dptr == 0) return CUDA_ERROR_INVALID_VALUE;
  auto node = std::make_unique<CUgraphNode_st>();
  node->kind = CUgraphNode_st::Kind::kMemFree;
  node->dptr = dptr;
  return AddNode(phGraphNode, hGraph, std::move(node));
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                     unsigned long long /*flags*/) {
  return Instantiate(phGraphExec, hGraph);
}
CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* /*errNode*/,
                            char* /*log*/, size_t /*logSize*/) {
  return Instantiate(phGraphExec, hGraph);
}
CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* /*errNode*/,
                               char* /*log*/, size_t /*logSize*/) {
  return Instantiate(phGraphExec, hGraph);
}

CUresult cuGraphLaunch(CUgraphExec exec, CUstream h) {
  return GraphLaunch(exec, h, false);
}
CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream h) {
  return GraphLaunch(exec, h, true);
}

CUresult cuGraphExecDestroy(CUgraphExec exec) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (!Has(D().graph_execs, exec)) return CUDA_ERROR_INVALID_VALUE;
  D().graph_execs.erase(exec);
  return CUDA_SUCCESS;
}

}  // extern "C"
