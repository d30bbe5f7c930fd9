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

#include "core/unique_fd.h"
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

// The transport's own answers, to heads it hands no site.
std::string plain_answer(int status, const char* reason, std::string_view body) {
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + std::string(body);
}

struct SslFree {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};

enum class State {
  kHandshake,  // TLS handshake
  kReadHead,   // reading the request head
  kWorking,    // a worker is answering; no deadline
  kWrite,      // sending the response
  kLinger,     // response sent and write side shut: dropping what the client still sends
};

struct Connection {
  UniqueFd fd;
  std::unique_ptr<SSL, SslFree> ssl;  // freed before fd closes
  State state = State::kReadHead;
  Clock::time_point deadline;
  std::string in;
  bool heard = false;  // the client has sent something (a TLS handshake counts)
  std::string out;
  std::size_t sent = 0;
  std::shared_ptr<const Site> site;  // as it was when the connection was accepted
  Peer peer;                         // who connected
  [[nodiscard]] bool awaiting_head() const {
    return state == State::kHandshake || state == State::kReadHead;
  }
};

struct Job {
  std::uint64_t id;
  HttpRequest request;
  std::shared_ptr<const Site> site;
  Peer peer;
};

// What one read or write on a connection came to.
enum class Io { kProgress, kBlocked, kClosed };

}  // namespace

struct HttpServer::Impl {
  Options options;
  UniqueFd listen_fd;
  UniqueFd epoll_fd;
  UniqueFd wake_fd;

  std::mutex site_mu;
  std::shared_ptr<const Site> site;

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

  explicit Impl(Options o) : options(std::move(o)) {}

  // EAGAIN means the counter is already non-zero: the loop wakes anyway.
  void wake() const {
    const std::uint64_t one = 1;
    if (write(wake_fd.get(), &one, sizeof(one)) < 0 && errno != EAGAIN) {
      spdlog::error("http: eventfd write: {}", std::strerror(errno));
    }
  }

  // ---- the loop thread ----

  void fail(const std::string& call, int err) {
    std::lock_guard lock(failure_mu);
    failure = errno_error("http: " + call, err);
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
      const int n = epoll_wait(epoll_fd.get(), events.data(), events.size(), next_timeout_ms());
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
          if (read(wake_fd.get(), &count, sizeof(count)) < 0 && errno != EAGAIN) {
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
      if (epoll_ctl(epoll_fd.get(), EPOLL_CTL_ADD, listen_fd.get(), &ev) == 0) {
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
      const int fd = accept4(listen_fd.get(), reinterpret_cast<sockaddr*>(&peer), &peer_len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          spdlog::warn("http: cannot accept: {}; pausing for {} s", std::strerror(errno),
                       kAcceptPause.count());
          if (epoll_ctl(epoll_fd.get(), EPOLL_CTL_DEL, listen_fd.get(), nullptr) != 0) {
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
      conn->fd.reset(fd);
      conn->peer = {.address = peer_address(peer), .loopback = is_loopback(peer)};
      conn->deadline = Clock::now() + options.header_timeout;
      {
        std::lock_guard lock(site_mu);
        conn->site = site;
      }
      if (conn->site->tls) {
        conn->ssl.reset(SSL_new(conn->site->tls.get()));
        if (!conn->ssl || SSL_set_fd(conn->ssl.get(), fd) != 1) {
          spdlog::error("http: cannot start TLS: {}", openssl_errors());
          continue;  // the connection's destructor closes fd
        }
        conn->state = State::kHandshake;
      }
      const std::uint64_t key = next_key++;
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
      ev.data.u64 = key;
      if (epoll_ctl(epoll_fd.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
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

  // Reads what the client sent into INTO, or without INTO writes what is left of the response.
  Io transfer(Connection& c, std::string* into) {
    std::array<char, 4096> buf{};
    const char* data = c.out.data() + c.sent;
    const std::size_t left = c.out.size() - c.sent;
    ssize_t n = 0;
    if (c.ssl && c.state != State::kLinger) {
      n = into != nullptr ? SSL_read(c.ssl.get(), buf.data(), static_cast<int>(buf.size()))
                          : SSL_write(c.ssl.get(), data,
                                      static_cast<int>(std::min<std::size_t>(left, 1 << 20)));
      if (n <= 0) {
        const int err = SSL_get_error(c.ssl.get(), static_cast<int>(n));
        ERR_clear_error();
        return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE ? Io::kBlocked
                                                                         : Io::kClosed;
      }
    } else {
      n = into != nullptr ? recv(c.fd.get(), buf.data(), buf.size(), 0)
                          : send(c.fd.get(), data, left, MSG_NOSIGNAL);
      if (n <= 0) {
        const bool blocked = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
        return blocked ? Io::kBlocked : Io::kClosed;
      }
    }
    if (into != nullptr) {
      into->append(buf.data(), static_cast<std::size_t>(n));
    } else {
      c.sent += static_cast<std::size_t>(n);
    }
    return Io::kProgress;
  }

  void reply(Connection& c, std::string bytes) {
    c.out = std::move(bytes);
    c.sent = 0;
    c.state = State::kWrite;
    c.deadline = Clock::now() + options.write_timeout;
  }

  // Moves a connection on as far as its socket allows; closes it when it is done or broken.
  void advance(std::uint64_t key, Connection& c) {
    for (;;) {
      switch (c.state) {
        case State::kHandshake: {
          const int rc = SSL_accept(c.ssl.get());
          c.heard = c.heard || BIO_number_read(SSL_get_rbio(c.ssl.get())) > 0;
          if (rc == 1) {
            c.state = State::kReadHead;
            continue;
          }
          const int err = SSL_get_error(c.ssl.get(), rc);
          if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
            return;
          }
          spdlog::debug("http: TLS handshake failed: {}", openssl_errors());
          conns.erase(key);
          return;
        }
        case State::kReadHead: {
          const Io io = transfer(c, &c.in);
          if (io == Io::kClosed) {
            conns.erase(key);
            return;
          }
          auto head = read_request_head(c.in);
          if (head.kind == HeadRead::Kind::kTooLarge) {
            reply(c,
                  plain_answer(431, "Request Header Fields Too Large", "request head too large\n"));
            continue;
          }
          if (head.kind == HeadRead::Kind::kMalformed) {
            reply(c, plain_answer(400, "Bad Request", "malformed request\n"));
            continue;
          }
          if (head.kind == HeadRead::Kind::kComplete) {
            c.state = State::kWorking;
            submit(Job{key, std::move(head.request), c.site, c.peer});
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
          const Io io = transfer(c, nullptr);
          if (io == Io::kClosed) {
            conns.erase(key);
            return;
          }
          if (io == Io::kBlocked) {
            return;
          }
          if (c.sent == c.out.size()) {
            if (c.ssl) {
              SSL_shutdown(c.ssl.get());  // sends close_notify; the client's is not awaited
              ERR_clear_error();
            }
            if (shutdown(c.fd.get(), SHUT_WR) != 0) {
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
          const Io io = transfer(c, &dropped);
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
      reply(*it->second, std::move(bytes));
      advance(key, *it->second);
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
        bytes = job.site->answer(job.request, job.peer);
      } catch (const std::exception& e) {  // out of memory, say: the connection still hears
        spdlog::error("http: {}", e.what());
        bytes = plain_answer(500, "Internal Server Error", std::string(e.what()) + "\n");
      }
      {
        std::lock_guard lock(jobs_mu);
        answers.emplace_back(job.id, std::move(bytes));
      }
      wake();
    }
  }
};

Result<std::unique_ptr<HttpServer>> HttpServer::start(const Options& options, Site site) {
  auto impl = std::make_unique<Impl>(options);
  impl->site = std::make_shared<const Site>(std::move(site));
  auto fd = listen_socket(options.listen,
                          std::chrono::ceil<std::chrono::seconds>(options.header_timeout));
  if (!fd.ok()) {
    return fd.error();
  }
  impl->listen_fd.reset(*fd);
  impl->epoll_fd.reset(epoll_create1(EPOLL_CLOEXEC));
  impl->wake_fd.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!impl->epoll_fd.valid() || !impl->wake_fd.valid()) {
    return errno_error("http", errno);
  }
  for (const auto& [watched, key] :
       {std::pair<int, std::uint64_t>{impl->listen_fd.get(), kListenKey},
        std::pair<int, std::uint64_t>{impl->wake_fd.get(), kWakeKey}}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = key;
    if (epoll_ctl(impl->epoll_fd.get(), EPOLL_CTL_ADD, watched, &ev) != 0) {
      return errno_error("http: epoll_ctl", errno);
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

void HttpServer::set_site(Site site) {
  auto fresh = std::make_shared<const Site>(std::move(site));
  std::lock_guard lock(impl_->site_mu);
  impl_->site = std::move(fresh);
}

Result<int> HttpServer::port() const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(impl_->listen_fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return errno_error("http: getsockname", errno);
  }
  if (addr.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
}

}  // namespace cephscope
