#include "server/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <csignal>

#include <spdlog/spdlog.h>

#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "server/http_message.h"
#include "server/sockets.h"

namespace cephscope {
namespace {

using Clock = std::chrono::steady_clock;

// epoll keys: the listening socket, the wake-up eventfd, then one per connection.
constexpr std::uint64_t kListenKey = 0;
constexpr std::uint64_t kWakeKey = 1;

// After the response, the connection is half-closed and what the client still sends is read
// and dropped for this long, so that closing does not reset the connection under a response
// the client has not read yet.
constexpr auto kLinger = std::chrono::seconds(2);

// How long accepting pauses when the process is out of file descriptors.
constexpr auto kAcceptPause = std::chrono::seconds(1);

enum class State {
  kHandshake,  // TLS handshake
  kReadHead,   // reading the request head
  kWorking,    // a worker is answering; no deadline
  kWrite,      // sending the response
  kLinger,     // response sent and write side shut: dropping what the client still sends
};

struct Connection {
  int fd = -1;
  SSL* ssl = nullptr;
  State state = State::kReadHead;
  Clock::time_point deadline;
  std::string in;
  bool heard = false;  // the client has sent something (a TLS handshake counts)
  std::string out;
  std::size_t sent = 0;
  std::shared_ptr<const WebConfig> web;  // as it was when the connection was accepted
  Peer peer;                             // who connected

  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() {
    if (ssl != nullptr) {
      SSL_free(ssl);
    }
    if (fd >= 0) {
      close(fd);
    }
  }
  [[nodiscard]] bool awaiting_head() const {
    return state == State::kHandshake || state == State::kReadHead;
  }
};

struct Job {
  std::uint64_t id;
  HttpRequest request;
  std::shared_ptr<const WebConfig> web;
  Peer peer;
};

// What one read or write on a connection came to.
enum class Io { kProgress, kBlocked, kClosed };

}  // namespace

struct HttpServer::Impl {
  Options options;
  const Routes routes;
  int listen_fd = -1;
  int epoll_fd = -1;
  int wake_fd = -1;

  std::mutex web_mu;
  std::shared_ptr<const WebConfig> web;

  // Why the loop thread stopped on its own, when it did.
  mutable std::mutex failure_mu;
  std::optional<Error> failure;

  // Jobs for the workers, and their answers for the loop.
  std::mutex jobs_mu;
  std::condition_variable jobs_cv;
  std::deque<Job> jobs;
  std::vector<std::pair<std::uint64_t, std::string>> answers;
  bool stopping = false;

  // Owned by the loop thread.
  std::map<std::uint64_t, std::unique_ptr<Connection>> conns;  // by key: oldest first
  std::uint64_t next_key = 2;
  bool accept_paused = false;
  Clock::time_point accept_resume;

  std::thread loop_thread;
  std::vector<std::thread> worker_threads;

  Impl(Options o, Routes r) : options(std::move(o)), routes(std::move(r)) {}
  ~Impl() {
    for (int fd : {listen_fd, epoll_fd, wake_fd}) {
      if (fd >= 0) {
        close(fd);
      }
    }
  }

  // EAGAIN means the counter is already non-zero: the loop wakes anyway.
  void wake() const {
    const std::uint64_t one = 1;
    if (write(wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN) {
      spdlog::error("http: eventfd write: {}", std::strerror(errno));
    }
  }

  // ---- the loop thread ----

  void fail(const std::string& call, int err) {
    std::lock_guard lock(failure_mu);
    failure = make_error(ErrorKind::kSystem, "http: " + call + ": " + std::strerror(err), err);
  }

  void run_loop() {
    // Writing to a socket the client has closed raises SIGPIPE in the writing thread: keep it
    // pending here rather than let it end the process (SSL_write cannot pass MSG_NOSIGNAL).
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    if (const int err = pthread_sigmask(SIG_BLOCK, &pipe, nullptr); err != 0) {
      fail("pthread_sigmask", err);
      return;
    }
    std::array<epoll_event, 64> events{};
    for (;;) {
      const int n = epoll_wait(epoll_fd, events.data(), events.size(), next_timeout_ms());
      if (n < 0 && errno != EINTR) {
        fail("epoll_wait", errno);
        return;
      }
      for (int i = 0; i < n; ++i) {
        const std::uint64_t key = events[i].data.u64;
        if (key == kListenKey) {
          accept_all();
        } else if (key == kWakeKey) {
          std::uint64_t count = 0;
          if (read(wake_fd, &count, sizeof(count)) < 0 && errno != EAGAIN) {
            fail("eventfd read", errno);
            return;
          }
          if (take_answers()) {
            return;  // stopping
          }
        } else if (auto it = conns.find(key); it != conns.end()) {
          if ((events[i].events & (EPOLLERR | EPOLLHUP)) != 0) {
            conns.erase(it);
          } else {
            advance(key, *it->second);
          }
        }
      }
      expire();
    }
  }

  int next_timeout_ms() const {
    auto next = Clock::time_point::max();
    for (const auto& [key, c] : conns) {
      if (c->state != State::kWorking) {
        next = std::min(next, c->deadline);
      }
    }
    if (accept_paused) {
      next = std::min(next, accept_resume);
    }
    if (next == Clock::time_point::max()) {
      return -1;
    }
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now());
    return static_cast<int>(std::max<std::int64_t>(wait.count(), 0));
  }

  void expire() {
    const auto now = Clock::now();
    for (auto it = conns.begin(); it != conns.end();) {
      const Connection& c = *it->second;
      if (c.state != State::kWorking && now >= c.deadline) {
        if (c.awaiting_head()) {
          spdlog::debug("http: closing a connection with no whole request head after {} ms",
                        options.header_timeout.count());
        } else if (c.state == State::kWrite) {
          spdlog::debug("http: closing a connection that did not read its response in {} ms",
                        options.write_timeout.count());
        }
        it = conns.erase(it);
      } else {
        ++it;
      }
    }
    if (accept_paused && now >= accept_resume) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = kListenKey;
      if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev) == 0) {
        accept_paused = false;
      } else {
        spdlog::error("http: epoll_ctl: {}; accepting again in {} s", std::strerror(errno),
                      kAcceptPause.count());
        accept_resume = now + kAcceptPause;
      }
    }
  }

  void accept_all() {
    for (;;) {
      sockaddr_storage peer{};
      socklen_t peer_len = sizeof(peer);
      const int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &peer_len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          spdlog::warn("http: cannot accept: {}; pausing for {} s", std::strerror(errno),
                       kAcceptPause.count());
          if (epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr) != 0) {
            // Still watched: the loop sees the listener again at once and retries.
            spdlog::error("http: epoll_ctl: {}", std::strerror(errno));
            return;
          }
          accept_paused = true;
          accept_resume = Clock::now() + kAcceptPause;
        }
        return;  // EAGAIN, or a connection that went away before it was accepted
      }
      if (conns.size() >= options.max_connections && !make_room()) {
        close(fd);
        continue;
      }
      auto conn = std::make_unique<Connection>();
      conn->fd = fd;
      conn->peer = {.address = peer_address(peer), .loopback = is_loopback(peer)};
      conn->deadline = Clock::now() + options.header_timeout;
      {
        std::lock_guard lock(web_mu);
        conn->web = web;
      }
      if (conn->web->tls) {
        conn->ssl = SSL_new(conn->web->tls->get());
        if (conn->ssl == nullptr || SSL_set_fd(conn->ssl, fd) != 1) {
          spdlog::error("http: cannot start TLS: {}", openssl_errors());
          continue;  // the connection's destructor closes fd
        }
        conn->state = State::kHandshake;
      }
      const std::uint64_t key = next_key++;
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
      ev.data.u64 = key;
      if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        spdlog::error("http: epoll_ctl: {}", std::strerror(errno));
        continue;
      }
      Connection& c = *conns.emplace(key, std::move(conn)).first->second;
      advance(key, c);
    }
  }

  // Closes the connection that has waited longest for its request head, one that has sent
  // nothing yet first (a client part-way through its head is likelier to be a scraper than
  // one of a flood of idle connections); false when every open connection is past its head
  // (being answered, or sending). A candidate is read once before it is judged silent: a
  // scraper accepted amid a flood may have sent its request since, unseen by this loop.
  bool make_room() {
    const auto silent = [](const Connection& c) {
      return c.awaiting_head() && c.in.empty() && !c.heard;
    };
    for (auto it = conns.begin(); it != conns.end();) {
      if (!silent(*it->second)) {
        ++it;
        continue;
      }
      const std::uint64_t key = it->first;
      advance(key, *it->second);
      it = conns.find(key);
      if (it == conns.end()) {
        return true;  // it had closed
      }
      if (silent(*it->second)) {
        spdlog::debug("http: {} connections open: closing the oldest silent one", conns.size());
        conns.erase(it);
        return true;
      }
      ++it;
    }
    for (auto it = conns.begin(); it != conns.end(); ++it) {
      if (it->second->awaiting_head()) {
        spdlog::debug("http: {} connections open: closing the oldest still sending its head",
                      conns.size());
        conns.erase(it);
        return true;
      }
    }
    spdlog::debug("http: {} connections open, all being answered: refusing a new one",
                  conns.size());
    return false;
  }

  Io read_some(Connection& c, std::string& into) {
    std::array<char, 4096> buf{};
    if (c.ssl != nullptr && c.state != State::kLinger) {
      const int n = SSL_read(c.ssl, buf.data(), static_cast<int>(buf.size()));
      if (n > 0) {
        into.append(buf.data(), static_cast<std::size_t>(n));
        return Io::kProgress;
      }
      const int err = SSL_get_error(c.ssl, n);
      ERR_clear_error();
      return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE ? Io::kBlocked : Io::kClosed;
    }
    const ssize_t n = recv(c.fd, buf.data(), buf.size(), 0);
    if (n > 0) {
      into.append(buf.data(), static_cast<std::size_t>(n));
      return Io::kProgress;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      return Io::kBlocked;
    }
    return Io::kClosed;
  }

  Io write_some(Connection& c) {
    const char* data = c.out.data() + c.sent;
    const std::size_t left = c.out.size() - c.sent;
    if (c.ssl != nullptr) {
      const int n = SSL_write(c.ssl, data, static_cast<int>(std::min<std::size_t>(left, 1 << 20)));
      if (n > 0) {
        c.sent += static_cast<std::size_t>(n);
        return Io::kProgress;
      }
      const int err = SSL_get_error(c.ssl, n);
      ERR_clear_error();
      return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE ? Io::kBlocked : Io::kClosed;
    }
    const ssize_t n = send(c.fd, data, left, MSG_NOSIGNAL);
    if (n > 0) {
      c.sent += static_cast<std::size_t>(n);
      return Io::kProgress;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      return Io::kBlocked;
    }
    return Io::kClosed;
  }

  void respond_now(Connection& c, int status, const std::string& body) {
    c.out = serialize_response(text_response(status, body), false);
    c.sent = 0;
    c.state = State::kWrite;
    c.deadline = Clock::now() + options.write_timeout;
  }

  // Moves a connection on as far as its socket allows; closes it when it is done or broken.
  void advance(std::uint64_t key, Connection& c) {
    for (;;) {
      switch (c.state) {
        case State::kHandshake: {
          const int rc = SSL_accept(c.ssl);
          c.heard = c.heard || BIO_number_read(SSL_get_rbio(c.ssl)) > 0;
          if (rc == 1) {
            c.state = State::kReadHead;
            continue;
          }
          const int err = SSL_get_error(c.ssl, rc);
          if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
            return;
          }
          spdlog::debug("http: TLS handshake failed: {}", openssl_errors());
          conns.erase(key);
          return;
        }
        case State::kReadHead: {
          const Io io = read_some(c, c.in);
          if (io == Io::kClosed) {
            conns.erase(key);
            return;
          }
          auto head = read_request_head(c.in);
          if (head.kind == HeadRead::Kind::kTooLarge) {
            respond_now(c, 431, "request head too large\n");
            continue;
          }
          if (head.kind == HeadRead::Kind::kMalformed) {
            respond_now(c, 400, "malformed request\n");
            continue;
          }
          if (head.kind == HeadRead::Kind::kComplete) {
            c.state = State::kWorking;
            submit(Job{key, std::move(head.request), c.web, c.peer});
            return;
          }
          if (io == Io::kBlocked) {
            return;
          }
          continue;
        }
        case State::kWorking:
          return;
        case State::kWrite: {
          const Io io = write_some(c);
          if (io == Io::kClosed) {
            conns.erase(key);
            return;
          }
          if (io == Io::kBlocked) {
            return;
          }
          if (c.sent == c.out.size()) {
            if (c.ssl != nullptr) {
              SSL_shutdown(c.ssl);  // sends close_notify; the client's is not awaited
              ERR_clear_error();
            }
            if (shutdown(c.fd, SHUT_WR) != 0) {
              conns.erase(key);  // the client went away: nothing left to linger for
              return;
            }
            c.state = State::kLinger;
            c.deadline = Clock::now() + kLinger;
          }
          continue;
        }
        case State::kLinger: {
          std::string dropped;
          const Io io = read_some(c, dropped);
          if (io == Io::kClosed) {
            conns.erase(key);
            return;
          }
          if (io == Io::kBlocked) {
            return;
          }
          continue;
        }
      }
    }
  }

  void submit(Job job) {
    {
      std::lock_guard lock(jobs_mu);
      jobs.push_back(std::move(job));
    }
    jobs_cv.notify_one();
  }

  // Hands the workers' answers to their connections; true when the server is stopping.
  bool take_answers() {
    std::vector<std::pair<std::uint64_t, std::string>> done;
    {
      std::lock_guard lock(jobs_mu);
      if (stopping) {
        return true;
      }
      done.swap(answers);
    }
    for (auto& [key, bytes] : done) {
      const auto it = conns.find(key);
      if (it == conns.end()) {
        continue;  // the client went away meanwhile
      }
      Connection& c = *it->second;
      c.out = std::move(bytes);
      c.sent = 0;
      c.state = State::kWrite;
      c.deadline = Clock::now() + options.write_timeout;
      advance(key, c);
    }
    return false;
  }

  // ---- the worker threads ----

  void run_worker() {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(jobs_mu);
        jobs_cv.wait(lock, [&] { return stopping || !jobs.empty(); });
        if (stopping) {
          return;
        }
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      std::string bytes;
      try {
        bytes = routes.answer(job.request, *job.web, job.peer);
      } catch (const std::exception& e) {  // out of memory, say: the connection still hears
        spdlog::error("http: {}", e.what());
        bytes = serialize_response(text_response(500, std::string(e.what()) + "\n"), false);
      }
      {
        std::lock_guard lock(jobs_mu);
        answers.emplace_back(job.id, std::move(bytes));
      }
      wake();
    }
  }
};

Result<std::unique_ptr<HttpServer>> HttpServer::start(const Options& options, WebConfig web,
                                                      Routes routes) {
  auto impl = std::make_unique<Impl>(options, std::move(routes));
  impl->web = std::make_shared<const WebConfig>(std::move(web));
  auto fd = listen_socket(options.listen,
                          std::chrono::ceil<std::chrono::seconds>(options.header_timeout));
  if (!fd.ok()) {
    return fd.error();
  }
  impl->listen_fd = *fd;
  impl->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  impl->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl->epoll_fd < 0 || impl->wake_fd < 0) {
    return make_error(ErrorKind::kSystem, std::string("http: ") + std::strerror(errno), errno);
  }
  for (const auto& [watched, key] : {std::pair<int, std::uint64_t>{impl->listen_fd, kListenKey},
                                     std::pair<int, std::uint64_t>{impl->wake_fd, kWakeKey}}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = key;
    if (epoll_ctl(impl->epoll_fd, EPOLL_CTL_ADD, watched, &ev) != 0) {
      return make_error(ErrorKind::kSystem, std::string("http: epoll_ctl: ") + std::strerror(errno),
                        errno);
    }
  }
  Impl* raw = impl.get();
  for (std::size_t i = 0; i < std::max<std::size_t>(options.workers, 1); ++i) {
    impl->worker_threads.emplace_back([raw] { raw->run_worker(); });
  }
  impl->loop_thread = std::thread([raw] { raw->run_loop(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  {
    std::lock_guard lock(impl_->jobs_mu);
    impl_->stopping = true;
  }
  impl_->jobs_cv.notify_all();
  impl_->wake();
  impl_->loop_thread.join();
  for (auto& t : impl_->worker_threads) {
    t.join();
  }
  impl_->conns.clear();
}

Status HttpServer::status() const {
  std::lock_guard lock(impl_->failure_mu);
  if (impl_->failure) {
    return *impl_->failure;
  }
  return ok_status();
}

void HttpServer::set_web_config(WebConfig web) {
  auto fresh = std::make_shared<const WebConfig>(std::move(web));
  std::lock_guard lock(impl_->web_mu);
  impl_->web = std::move(fresh);
}

Result<int> HttpServer::port() const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(impl_->listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return make_error(ErrorKind::kSystem, std::string("http: getsockname: ") + std::strerror(errno),
                      errno);
  }
  if (addr.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
}

}  // namespace cephscope
