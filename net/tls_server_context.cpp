#include "net/tls_server_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "net/tls_pair.h"

namespace vgpu::net {

Result<std::shared_ptr<ssl_ctx_st>> LoadTlsServerContext(const std::string& cert_file,
                                                         const std::string& key_file) {
  VGPU_RETURN_IF_ERROR(CheckTlsPair(cert_file, key_file));
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx) {
    ERR_clear_error();
    return Internal("cannot create a TLS context (OpenSSL out of memory?)");
  }
  (void)SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION);
  // Non-blocking writes of answers held in a std::string: partial writes, and the retry of a
  // write may pass the same bytes at another address.
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), cert_file.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx.get(), key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx.get()) != 1) {
    ERR_clear_error();
    // CheckTlsPair passed a moment ago: the files changed in between (a rotation under way).
    return Unavailable("cannot load TLS certificate " + cert_file + " and key " + key_file +
                       " (changed while loading?)");
  }
  return ctx;
}

}  // namespace vgpu::net
