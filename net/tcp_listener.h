#pragma once

// A non-blocking listening TCP socket for net/http_server.h, with the system's deepest accept
// queue: kube-scheduler binds pods concurrently, and a shallow queue drops the handshakes of a
// burst (see net/http_listen.h for what cpp-httplib's backlog of 5 did).

#include <string>

#include "core/base/status.h"

namespace vgpu::net {

struct TcpListener {
  int fd = -1;
  int port = 0;  // the port bound (the one asked for, or the one picked for port 0)
};

// Listens on host:port (port 0: any free port). SO_REUSEADDR only: a restart does not trip over
// its own TIME_WAIT connections, and a port another process listens on is an error (no
// SO_REUSEPORT, which would share it silently). The caller closes `fd`.
Result<TcpListener> ListenTcp(const std::string& host, int port);

}  // namespace vgpu::net
