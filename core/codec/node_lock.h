#pragma once

// Values of the node lock `hami.io/mutex.lock` and the handshake `hami.io/node-handshake`
// (hami-compat.md §2).

#include <optional>
#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/codec/time_format.h"

namespace vgpu::codec {

// `<RFC3339 time>,<namespace>,<pod>`; legacy HAMi wrote a bare RFC3339 time (owner unknown).
struct NodeLock {
  Seconds time;
  std::string pod_namespace;  // empty for the legacy form
  std::string pod_name;       // empty for the legacy form

  bool has_owner() const { return !pod_name.empty(); }
  friend bool operator==(const NodeLock&, const NodeLock&) = default;
};

std::string EncodeNodeLock(const NodeLock& lock);
Result<NodeLock> DecodeNodeLock(std::string_view text);

// Handshake states: the scheduler writes `Requesting_<YYYY-MM-DD hh:mm:ss>` to ask the device
// plugin to re-report, the device plugin answers `Reported <time>` (Go's time.String(), of which
// only the leading date and time are read), and the scheduler writes `Deleted_<time>` when the
// node did not answer in time.
enum class HandshakeState { kRequesting, kReported, kDeleted };

struct Handshake {
  HandshakeState state = HandshakeState::kReported;
  Seconds time;

  friend bool operator==(const Handshake&, const Handshake&) = default;
};

std::string EncodeHandshake(const Handshake& h);
Result<Handshake> DecodeHandshake(std::string_view text);

}  // namespace vgpu::codec
