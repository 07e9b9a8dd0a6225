#pragma once

// Who is calling: the scheduler answers its extender verbs to kube-scheduler on the same host
// (the same pod) only, unless told otherwise (docs/security.md).

#include <string>

namespace vgpu::net {

// Whether `address`, a peer address as the listeners report it (HttpRequest::remote_addr:
// "127.0.0.1", "::1", "::ffff:127.0.0.1"), is a loopback address of this host: 127.0.0.0/8, ::1,
// or 127.0.0.0/8 mapped into IPv6. Anything else, also text that is no address, is not.
bool IsLoopbackAddress(const std::string& address);

}  // namespace vgpu::net
