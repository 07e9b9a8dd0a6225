#include "net/tls_pair.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <memory>

namespace vgpu::net {
namespace {

struct FileCloser {
  void operator()(FILE* f) const { (void)std::fclose(f); }  // read only: nothing to lose
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using File = std::unique_ptr<FILE, FileCloser>;

File Open(const std::string& path) {
  return File(std::fopen(path.c_str(), "re"));
}

}  // namespace

Status CheckTlsPair(const std::string& cert_file, const std::string& key_file) {
  const File cf = Open(cert_file);
  if (!cf) return NotFound("cannot open TLS certificate " + cert_file);
  const std::unique_ptr<X509, X509Free> cert(PEM_read_X509(cf.get(), nullptr, nullptr, nullptr));
  const File kf = Open(key_file);
  if (!kf) return NotFound("cannot open TLS key " + key_file);
  const std::unique_ptr<EVP_PKEY, KeyFree> key(
      PEM_read_PrivateKey(kf.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!cert) return InvalidArgument("TLS certificate " + cert_file + " is not a PEM certificate");
  if (!key)
    return InvalidArgument("TLS key " + key_file + " is not an unencrypted PEM private key");
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return InvalidArgument("TLS key " + key_file + " is not the private key of certificate " +
                           cert_file);
  }
  return Status::Ok();
}

}  // namespace vgpu::net
