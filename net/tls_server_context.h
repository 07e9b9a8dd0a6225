#pragma once

// An OpenSSL server context for net/http_server.h, loaded from a PEM certificate (chain) and key.
// A listener that reloads its certificate swaps in a new context; connections already open keep
// the one they started with (a shared_ptr each).

#include <memory>
#include <string>

#include "core/base/status.h"

struct ssl_ctx_st;

namespace vgpu::net {

// Checks the pair first (net/tls_pair.h: which file is wrong and how), then loads it. TLS 1.2 and
// later; renegotiation off (a client could make the server redo handshakes at will).
Result<std::shared_ptr<ssl_ctx_st>> LoadTlsServerContext(const std::string& cert_file,
                                                         const std::string& key_file);

}  // namespace vgpu::net
