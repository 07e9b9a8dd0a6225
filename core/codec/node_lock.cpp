#include "core/codec/node_lock.h"

#include "core/codec/parse_util.h"

namespace vgpu::codec {

using codec_internal::Quote;

std::string EncodeNodeLock(const NodeLock& lock) {
  std::string out = FormatRfc3339(lock.time);
  if (lock.has_owner()) out += "," + lock.pod_namespace + "," + lock.pod_name;
  return out;
}

Result<NodeLock> DecodeNodeLock(std::string_view text) {
  auto parts = codec_internal::Split(text, ',');
  if (parts.size() != 1 && parts.size() != 3) {
    return InvalidArgument("node lock " + Quote(text) +
                           ": want <RFC3339 time>,<namespace>,<pod> or a bare RFC3339 time");
  }
  auto t = ParseRfc3339(parts[0]);
  if (!t.ok()) return t.status().WithContext("node lock " + Quote(text));
  NodeLock lock{*t, "", ""};
  if (parts.size() == 3) {
    if (parts[1].empty() || parts[2].empty()) {
      return InvalidArgument("node lock " + Quote(text) + ": empty namespace or pod name");
    }
    lock.pod_namespace = std::string(parts[1]);
    lock.pod_name = std::string(parts[2]);
  }
  return lock;
}

namespace {
constexpr std::string_view kRequesting = "Requesting_";
constexpr std::string_view kDeleted = "Deleted_";
constexpr std::string_view kReported = "Reported";
}  // namespace

std::string EncodeHandshake(const Handshake& h) {
  switch (h.state) {
    case HandshakeState::kRequesting:
      return std::string(kRequesting) + FormatDateTime(h.time);
    case HandshakeState::kDeleted:
      return std::string(kDeleted) + FormatDateTime(h.time);
    case HandshakeState::kReported:
      break;
  }
  // Same leading shape as Go's time.Time.String() for UTC.
  return std::string(kReported) + " " + FormatDateTime(h.time) + " +0000 UTC";
}

Result<Handshake> DecodeHandshake(std::string_view text) {
  Handshake h;
  std::string_view rest;
  if (text.starts_with(kRequesting)) {
    h.state = HandshakeState::kRequesting;
    rest = text.substr(kRequesting.size());
  } else if (text.starts_with(kDeleted)) {
    h.state = HandshakeState::kDeleted;
    rest = text.substr(kDeleted.size());
  } else if (text.starts_with(kReported) && text.size() > kReported.size() &&
             (text[kReported.size()] == ' ' || text[kReported.size()] == '_')) {
    h.state = HandshakeState::kReported;
    rest = text.substr(kReported.size() + 1).substr(0, 19);
  } else {
    return InvalidArgument("handshake " + Quote(text) +
                           ": want Requesting_<time>, Reported <time> or Deleted_<time>");
  }
  auto t = ParseDateTime(rest);
  if (!t.ok()) return t.status().WithContext("handshake " + Quote(text));
  h.time = *t;
  return h;
}

}  // namespace vgpu::codec
