#include "net/http_listen.h"

#include <httplib.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <system_error>

namespace vgpu::net {

namespace {

void ServeUntilStopped(httplib::Server& server, const std::string& what) {
  if (server.listen_after_bind()) {
    return;  // stop() was called
  }
  const std::string why = std::system_category().message(errno);
  (void)std::fprintf(stderr,
                     "%s: stopped accepting connections (last error: %s); restart the process\n",
                     what.c_str(), why.c_str());
}

}  // namespace

Result<int> BindWithDeepBacklog(httplib::Server& server, const std::string& host, int port) {
  // httplib hands its socket options callback the listening socket before bind/listen; that is
  // the only way to learn the descriptor. Addresses tried and abandoned are closed by httplib,
  // so the last one seen is the one that was bound.
  auto listening = std::make_shared<int>(-1);
  server.set_socket_options([listening](socket_t sock) {
    httplib::default_socket_options(sock);
    *listening = sock;
  });
  const int bound =
      port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  server.set_socket_options(httplib::default_socket_options);
  const std::string where = host + ":" + std::to_string(port);
  if (bound <= 0) {
    return Unavailable("cannot listen on " + where + " (port in use, or not a local address?)");
  }
  if (*listening < 0) {
    server.stop();
    return Internal("cannot deepen the accept queue on " + where +
                    ": httplib did not show its listening socket");
  }
  // listen() again on a listening socket only changes its backlog (Linux caps it at somaxconn).
  if (::listen(*listening, SOMAXCONN) != 0) {
    const std::string why = std::system_category().message(errno);
    server.stop();
    return Internal("cannot deepen the accept queue on " + where + ": " + why);
  }
  return bound;
}

Result<int> StartServing(httplib::Server& server, const std::string& host, int port,
                         const std::string& what, std::thread& serving) {
  Result<int> bound = BindWithDeepBacklog(server, host, port);
  if (!bound.ok()) {
    return bound.status().WithContext(what);
  }
  serving = std::thread([&server, what] { ServeUntilStopped(server, what); });
  return bound;
}

}  // namespace vgpu::net
