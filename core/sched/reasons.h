#pragma once

// Why a GPU or a node cannot take a pod. Words are HAMi's, so that users and dashboards that
// grep kube-scheduler events for them keep working.

#include <array>
#include <cstddef>
#include <string_view>

namespace vgpu::sched {

enum class Reason : std::size_t {
  kCardNotHealth,
  kCardCordoned,
  kCardTypeMismatch,
  kCardUuidMismatch,
  kCardTimeSlicingExhausted,
  kCardInsufficientMemory,
  kCardInsufficientCore,
  kCardComputeUnitsExhausted,
  kExclusiveDeviceAllocateConflict,
  kNumaNotFit,
  kNodeInsufficientDevice,
  kNodeUnregistered,      // no (valid) inventory annotation
  kNodeHandshakeTimeout,  // device plugin did not answer the handshake in time
  kQuotaExceeded,
  kCount,
};

constexpr std::array<std::string_view, static_cast<std::size_t>(Reason::kCount)> kReasonNames = {
    "CardNotHealth",
    "CardCordoned",
    "CardTypeMismatch",
    "CardUuidMismatch",
    "CardTimeSlicingExhausted",
    "CardInsufficientMemory",
    "CardInsufficientCore",
    "CardComputeUnitsExhausted",
    "ExclusiveDeviceAllocateConflict",
    "NumaNotFit",
    "NodeInsufficientDevice",
    "NodeUnregistered",
    "NodeHandshakeTimeout",
    "ResourceQuotaExceeded",
};

constexpr std::string_view ReasonName(Reason r) {
  return kReasonNames[static_cast<std::size_t>(r)];
}

}  // namespace vgpu::sched
