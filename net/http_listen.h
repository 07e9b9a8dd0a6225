#pragma once

// Listening sockets for the project's HTTP servers (cpp-httplib).
//
// Debian's cpp-httplib is a compiled library whose listen() uses a backlog of 5, whatever
// CPPHTTPLIB_LISTEN_BACKLOG says at our compile time. kube-scheduler binds pods concurrently, so a
// burst of /bind calls overflows that queue: the kernel drops handshakes, and clients whose
// request went out on a connection the server never completed see it reset ("Read" errors after
// about a second, the SYN-ACK retransmission time). Binding through this header re-listens on the
// same socket with the system's maximum backlog.

#include <string>
#include <thread>

#include "core/base/status.h"

namespace httplib {
class Server;
}

namespace vgpu::net {

// Binds `server` to host:port (port 0 = any free port) with a deep accept queue and returns the
// port. The caller then runs server.listen_after_bind(), or uses StartServing.
Result<int> BindWithDeepBacklog(httplib::Server& server, const std::string& host, int port);

// BindWithDeepBacklog, then server.listen_after_bind() on `serving` (joined by the caller after
// server.stop()). Errors name `what`; nothing is started when binding fails. httplib closes its
// listening socket on any accept() error other than EMFILE and returns, which would end service
// silently: that is reported on stderr with `what` and errno.
Result<int> StartServing(httplib::Server& server, const std::string& host, int port,
                         const std::string& what, std::thread& serving);

}  // namespace vgpu::net
