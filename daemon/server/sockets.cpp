#include "server/sockets.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace cephscope {

Result<int> listen_socket(const std::string& listen, std::chrono::seconds defer_accept) {
  std::string host;
  std::string port = listen;
  if (!listen.empty() && listen.front() == '[') {
    const auto end = listen.find("]:");
    if (end == std::string::npos) {
      return make_error(ErrorKind::kInvalidInput, "cannot listen on " + listen + ": no port");
    }
    host = listen.substr(1, end - 1);
    port = listen.substr(end + 2);
  } else if (const auto colon = listen.rfind(':'); colon != std::string::npos) {
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
  }
  if (host.empty()) {
    host = "0.0.0.0";
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return make_error(ErrorKind::kInvalidInput,
                      "cannot listen on " + listen + ": " + gai_strerror(rc));
  }
  int err = 0;
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      err = errno;
      continue;
    }
    const int one = 1;
    // A client speaks first (an HTTP head, a TLS ClientHello): the kernel holds a connection
    // back from accept() until its first bytes arrive, so a flood of connections that send
    // nothing takes neither a descriptor nor a connection slot, and cannot crowd out a scrape
    // accepted before its request arrived. Silent ones reach accept() after the delay, and the
    // header deadline then closes them.
    const int defer = static_cast<int>(defer_accept.count());
    if (defer > 0 && setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer, sizeof(defer)) != 0) {
      err = errno;
      close(fd);
      continue;
    }
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
        bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
      freeaddrinfo(found);
      return fd;
    }
    err = errno;
    close(fd);
  }
  freeaddrinfo(found);
  return errno_error("cannot listen on " + listen, err);
}

// Whether an accepted peer is this host: IPv4 127.0.0.0/8, ::1, or IPv4-mapped loopback.
bool is_loopback(const sockaddr_storage& peer) {
  if (peer.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(peer);
    return (ntohl(in.sin_addr.s_addr) >> 24) == 127;
  }
  if (peer.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&in6)) {
      return true;
    }
    return IN6_IS_ADDR_V4MAPPED(&in6) && in6.s6_addr[12] == 127;
  }
  return false;
}

std::string peer_address(const sockaddr_storage& peer) {
  std::array<char, INET6_ADDRSTRLEN> text{};
  if (peer.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(peer);
    inet_ntop(AF_INET, &in.sin_addr, text.data(), text.size());
  } else if (peer.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&in6)) {
      inet_ntop(AF_INET, &in6.s6_addr[12], text.data(), text.size());
    } else {
      inet_ntop(AF_INET6, &in6, text.data(), text.size());
    }
  }
  return text.data();
}

std::string openssl_errors() {
  std::string out;
  while (const unsigned long code = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

}  // namespace cephscope
