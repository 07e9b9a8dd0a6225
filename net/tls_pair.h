#pragma once

// A TLS certificate file and key file checked as a pair before a server loads them.
//
// httplib's SSLServer only says "not valid" when a pair fails to load. A certificate rotation
// replaces the two files one after the other and passes through a state where they do not match;
// a server that reloads on change checks first, keeps the old pair meanwhile, and when it cannot
// start at all says which file is wrong and how.

#include <string>

#include "core/base/status.h"

namespace vgpu::net {

// Ok when both files parse (PEM) and the key is the certificate's private key; otherwise an error
// naming the files and what is wrong.
Status CheckTlsPair(const std::string& cert_file, const std::string& key_file);

}  // namespace vgpu::net
