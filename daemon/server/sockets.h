// The endpoint's sockets: the listening one, where an accepted peer is, and what OpenSSL said.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <string>

#include "core/result.h"

namespace cephscope {

// A non-blocking listening TCP socket on LISTEN ("PORT", "HOST:PORT" or "[V6]:PORT"); a
// connection reaches accept() once it has sent its first bytes, or DEFER_ACCEPT after its
// handshake (0: at once).
Result<int> listen_socket(const std::string& listen, std::chrono::seconds defer_accept);

// Whether an accepted peer is this host: IPv4 127.0.0.0/8, ::1, or IPv4-mapped loopback.
bool is_loopback(const sockaddr_storage& peer);

// An accepted peer's address as text ("127.0.0.2", "::1"; an IPv4-mapped one as IPv4).
std::string peer_address(const sockaddr_storage& peer);

// The OpenSSL error queue as one line (emptied).
std::string openssl_errors();

}  // namespace cephscope
