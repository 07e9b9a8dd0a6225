#include "net/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/base/log.h"
#include "net/http_request_parser.h"
#include "net/http_transport.h"
#include "net/tcp_listener.h"
#include "net/worker_pool.h"

namespace vgpu::net {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr uint64_t kListenerId = 0;
constexpr uint64_t kWakeId = 1;
constexpr size_t kReadChunk = size_t{64} << 10;
// Reads (and accepts) per readiness event: one connection sending fast cannot hold the I/O thread
// from the others; level-triggered epoll reports it again at once.
constexpr int kReadsPerEvent = 16;
constexpr int kAcceptsPerEvent = 256;
constexpr milliseconds kAcceptPause{100};         // after EMFILE and the like
constexpr milliseconds kRefusalLogEvery{10'000};  // at most one line per reason this often

enum class Phase {
  kHandshake,  // TLS handshake
  kWaiting,    // no byte of the next request yet
  kReading,    // a request under way
  kBusy,       // a worker runs the handler; not watched
  kWriting,    // the answer
  kLingering,  // answered and closing: reading and dropping what the client still sends
};

struct Conn;

// A client as the limits see it (net/http_limits.h): what its connections hold together.
struct Peer {
  std::string key;  // PeerKey()
  int conns = 0;
  size_t buffered = 0;         // request body bytes counted for its connections
  std::vector<Conn*> members;  // its open connections, in no order
};

struct Conn {
  uint64_t id = 0;
  int fd = -1;
  std::string peer_address;  // the client's address as text
  Peer* peer = nullptr;      // set while open
  size_t peer_slot = 0;      // its place in peer->members
  std::unique_ptr<Transport> io;
  Phase phase = Phase::kWaiting;
  Clock::time_point deadline;
  Clock::time_point active;  // when it last started waiting or a request
  uint32_t watched = 0;      // epoll events registered; 0 = not registered
  bool dead = false;
  bool read_wants_write = false;  // TLS: the last read waits for writability

  std::string in;  // received and not yet consumed
  bool have_head = false;
  RequestHead head;
  std::optional<ChunkedBodyDecoder> chunked;
  std::string body;
  size_t reserved = 0;  // body bytes counted against the listener's budget

  std::string out;
  size_t out_off = 0;
  bool close_after = false;
  bool head_only = false;
  size_t drained = 0;  // bytes dropped while lingering
};

struct RouteEntry {
  std::string method;
  std::string path;
  HttpHandler handler;
  RunOn run_on;
};

HttpResponse Call(const HttpHandler& handler, const HttpRequest& request) {
  try {
    return handler(request);
  } catch (const std::exception& e) {
    return HttpResponse::Text(500, std::string("internal error: ") + e.what());
  } catch (...) {
    return HttpResponse::Text(500, "internal error");
  }
}

std::string AddressText(int family, const void* raw) {
  char text[INET6_ADDRSTRLEN] = {};
  return ::inet_ntop(family, raw, text, sizeof text) != nullptr ? text : "";
}

std::string PeerAddress(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET6) {
    return AddressText(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr);
  }
  if (addr.ss_family == AF_INET) {
    return AddressText(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr);
  }
  return "";
}

// Who shares one share of the limits: an IPv4 address (also mapped into IPv6); an IPv6 /64,
// since one host is given a /64 and can connect from any address of it.
std::string PeerKey(const sockaddr_storage& addr) {
  if (addr.ss_family != AF_INET6) return PeerAddress(addr);
  in6_addr a = reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr;
  if (IN6_IS_ADDR_V4MAPPED(&a)) return AddressText(AF_INET, &a.s6_addr[12]);
  std::fill(std::begin(a.s6_addr) + 8, std::end(a.s6_addr), uint8_t{0});
  return AddressText(AF_INET6, &a) + "/64";
}

// Which of a peer's connections gives way first: one that owes the client nothing and has no
// request under way, then one whose request has not begun, then one under way. Connections with
// a handler running or an answer being written are never closed for room.
int EvictionRank(Phase phase) {
  switch (phase) {
    case Phase::kLingering:
      return 0;
    case Phase::kWaiting:
      return 1;
    case Phase::kHandshake:
      return 2;
    case Phase::kReading:
      return 3;
    case Phase::kBusy:
    case Phase::kWriting:
      break;
  }
  return -1;
}

// TLS writes go through write(2), which raises SIGPIPE on a connection the peer reset; that must
// be an error of the one connection, not the end of the process. A handler the program set stays.
void IgnoreSigpipe() {
  struct sigaction old {};
  if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
    (void)std::signal(SIGPIPE, SIG_IGN);
  }
}

}  // namespace

class HttpServer::Impl {
 public:
  explicit Impl(HttpServerOptions options) : options_(std::move(options)), tls_(options_.tls) {
    const milliseconds shortest =
        std::min({options_.limits.request_timeout, options_.limits.idle_timeout,
                  options_.limits.write_timeout, options_.limits.linger});
    sweep_every_ = std::clamp(shortest / 4, milliseconds(5), milliseconds(100));
  }
  ~Impl() { Stop(); }

  void Route(std::string method, std::string path, HttpHandler handler, RunOn run_on) {
    routes_.push_back({std::move(method), std::move(path), std::move(handler), run_on});
  }

  Result<int> Start(const std::string& host, int port) {
    Result<TcpListener> listener = ListenTcp(host, port);
    if (!listener.ok()) return listener.status().WithContext(options_.what);
    listen_fd_ = listener->fd;
    port_ = listener->port;
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd_ < 0 || wake_fd_ < 0 || !Register(listen_fd_, kListenerId, EPOLLIN) ||
        !Register(wake_fd_, kWakeId, EPOLLIN)) {
      const std::string why = std::system_category().message(errno);
      CloseFds();
      return Internal(options_.what + ": cannot set up epoll: " + why);
    }
    IgnoreSigpipe();
    pool_ = std::make_unique<WorkerPool>(options_.worker_threads,
                                         static_cast<size_t>(options_.limits.max_queued_requests));
    io_thread_ = std::thread([this] { Loop(); });
    return port_;
  }

  void Stop() {
    if (io_thread_.joinable()) {
      stopping_.store(true);
      Wake();
      io_thread_.join();
    }
    // Handlers still running finish here; their answers have no connection left to go to.
    if (pool_) pool_->Shutdown();
    CloseFds();
  }

  void SetTlsContext(std::shared_ptr<ssl_ctx_st> ctx) {
    std::lock_guard lock(tls_mu_);
    tls_ = std::move(ctx);
  }

  int port() const { return port_; }

  HttpServerStats stats() const {
    HttpServerStats s;
    s.accepted = accepted_.load();
    s.refused_connections = refused_.load();
    s.evicted = evicted_.load();
    s.timed_out = timed_out_.load();
    s.too_large = too_large_.load();
    s.busy = busy_.load();
    s.open = open_.load();
    s.peers = peers_count_.load();
    return s;
  }

  std::string Saturation() const {
    if (pool_ == nullptr || !pool_->Full()) return "";
    return "all " + std::to_string(options_.worker_threads) + " workers busy and " +
           std::to_string(options_.limits.max_queued_requests) + " requests waiting";
  }

 private:
  // ---- the I/O thread --------------------------------------------------------------------------

  void Loop() {
    std::vector<epoll_event> events(256);
    Clock::time_point next_sweep = Clock::now() + sweep_every_;
    while (!stopping_.load()) {
      const int wait_ms = ready_.empty() ? static_cast<int>(sweep_every_.count()) : 0;
      const int n =
          ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), wait_ms);
      if (n < 0 && errno != EINTR) {
        log::Error("epoll_wait failed; the listener stops",
                   {{"listener", options_.what}, {"error", std::system_category().message(errno)}});
        break;
      }
      for (int i = 0; i < n; ++i) {
        const uint64_t id = events[static_cast<size_t>(i)].data.u64;
        if (id == kListenerId) {
          Accept();
        } else if (id == kWakeId) {
          uint64_t count = 0;
          (void)!::read(wake_fd_, &count, sizeof count);
        } else if (Conn* c = Find(id)) {
          OnEvent(*c, events[static_cast<size_t>(i)].events);
        }
      }
      TakeAnswers();
      ResumeReady();
      const Clock::time_point now = Clock::now();
      if (now >= next_sweep) {
        Sweep(now);
        next_sweep = now + sweep_every_;
      }
      if (accept_paused_ && now >= accept_resume_) {
        accept_paused_ = false;
        (void)Modify(listen_fd_, kListenerId, EPOLLIN);
      }
      Reap();
    }
    for (auto& [id, c] : conns_) Close(*c);
    Reap();
  }

  Conn* Find(uint64_t id) {
    const auto it = conns_.find(id);
    return it == conns_.end() || it->second->dead ? nullptr : it->second.get();
  }

  void Accept() {
    for (int i = 0; i < kAcceptsPerEvent; ++i) {
      sockaddr_storage addr{};
      socklen_t addr_len = sizeof addr;
      const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &addr_len,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        // Out of descriptors before max_connections (RLIMIT_NOFILE lower): the peer holding the
        // most gives one back, as at the cap.
        if ((errno == EMFILE || errno == ENFILE) && !by_conns_.empty() &&
            EvictIdle(*by_conns_.rbegin()->second)) {
          continue;
        }
        // Out of descriptors or memory: the pending connection stays queued and would wake us at
        // once, again and again; stop watching the listener for a moment instead.
        LogRefusal(last_accept_error_log_, "cannot accept connections",
                   std::system_category().message(errno));
        accept_paused_ = true;
        accept_resume_ = Clock::now() + kAcceptPause;
        (void)Modify(listen_fd_, kListenerId, 0);
        return;
      }
      accepted_.fetch_add(1);
      // (Making room may close the peer's last connection and forget it: looked up again.)
      const std::string key = PeerKey(addr);
      if (std::string why = MakeRoomFor(PeerFor(key)); !why.empty()) {
        RefuseConnection(fd, why);
        ForgetIfUnused(PeerFor(key));
        continue;
      }
      Peer& peer = PeerFor(key);
      const int yes = 1;  // small answers: without it Nagle + delayed ACK add ~40 ms each
      (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      std::shared_ptr<ssl_ctx_st> tls;
      {
        std::lock_guard lock(tls_mu_);
        tls = tls_;
      }
      auto c = std::make_unique<Conn>();
      c->id = next_id_++;
      c->fd = fd;
      c->peer_address = PeerAddress(addr);
      c->io = tls ? TlsTransport(fd, tls.get()) : PlainTransport(fd);
      if (!c->io) {
        (void)::close(fd);
        ForgetIfUnused(peer);
        continue;
      }
      c->phase = tls ? Phase::kHandshake : Phase::kWaiting;
      c->active = Clock::now();
      c->deadline = c->active + options_.limits.request_timeout;
      Conn& conn = *c;
      conns_.emplace(conn.id, std::move(c));
      Attach(conn, peer);
      open_.store(static_cast<int>(conns_.size()));
      Watch(conn, EPOLLIN);
    }
  }

  // "" when `peer` may open one more connection, after closing one to make room if need be
  // (net/http_limits.h); else why not.
  std::string MakeRoomFor(Peer& peer) {
    const HttpLimits& l = options_.limits;
    if (peer.conns >= l.max_connections_per_peer) {
      if (EvictIdle(peer)) return "";
      return "this client has " + std::to_string(peer.conns) +
             " connections open, its limit, none of them idle; retry";
    }
    if (live_ < l.max_connections) return "";
    // The peer holding the most gives way; the newcomer's own peer on a tie.
    Peer* victim = by_conns_.empty() ? nullptr : by_conns_.rbegin()->second;
    if (victim == nullptr || victim->conns <= peer.conns) victim = &peer;
    if (victim->conns > 0 && EvictIdle(*victim)) return "";
    return "over " + std::to_string(l.max_connections) + " connections open; retry";
  }

  // Closes the connection of `peer` that gives way first (EvictionRank, then the longest idle);
  // false when none may.
  bool EvictIdle(Peer& peer) {
    Conn* best = nullptr;
    for (Conn* c : peer.members) {
      const int rank = EvictionRank(c->phase);
      if (rank < 0 || c->dead) continue;
      if (best == nullptr || rank < EvictionRank(best->phase) ||
          (rank == EvictionRank(best->phase) && c->active < best->active)) {
        best = c;
      }
    }
    if (best == nullptr) return false;
    evicted_.fetch_add(1);
    LogRefusal(last_evict_log_, "connection closed to make room for another",
               "peer " + peer.key + " holds " + std::to_string(peer.conns));
    Close(*best);
    return true;
  }

  // A one-line 503 where the socket takes it at once (plain HTTP only; a TLS client would not
  // understand it), then close.
  void RefuseConnection(int fd, const std::string& why) {
    refused_.fetch_add(1);
    bool tls = false;
    {
      std::lock_guard lock(tls_mu_);
      tls = tls_ != nullptr;
    }
    if (!tls) {
      const std::string answer = SerializeResponse(HttpResponse::Text(503, why),
                                                   /*close=*/true, /*head_only=*/false);
      (void)::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    (void)::close(fd);
    LogRefusal(last_capacity_log_, "connection refused", why);
  }

  // ---- peers -----------------------------------------------------------------------------------

  Peer& PeerFor(std::string key) {
    auto [it, added] = peers_.try_emplace(key);
    if (added) {
      it->second.key = std::move(key);
      peers_count_.store(static_cast<int>(peers_.size()));
    }
    return it->second;
  }

  void ForgetIfUnused(Peer& peer) {
    if (peer.conns > 0 || peer.buffered > 0) return;
    peers_.erase(peer.key);
    peers_count_.store(static_cast<int>(peers_.size()));
  }

  void SetConns(Peer& peer, int n) {
    if (peer.conns > 0) by_conns_.erase({peer.conns, &peer});
    peer.conns = n;
    if (n > 0) by_conns_.insert({n, &peer});
  }

  void Attach(Conn& c, Peer& peer) {
    c.peer = &peer;
    c.peer_slot = peer.members.size();
    peer.members.push_back(&c);
    SetConns(peer, peer.conns + 1);
    ++live_;
  }

  void Detach(Conn& c) {
    Peer& peer = *c.peer;
    Conn* last = peer.members.back();
    peer.members[c.peer_slot] = last;
    last->peer_slot = c.peer_slot;
    peer.members.pop_back();
    SetConns(peer, peer.conns - 1);
    --live_;
    c.peer = nullptr;
    ForgetIfUnused(peer);
  }

  // Counts `total` bytes of body for the request of `c` (which never shrinks while under way);
  // "" when they fit its peer's share and the listener's budget (after the peer holding the most
  // gave way, if need be), else why not.
  std::string Charge(Conn& c, size_t total) {
    if (total <= c.reserved) return "";
    const HttpLimits& l = options_.limits;
    const size_t more = total - c.reserved;
    Peer& peer = *c.peer;
    if (peer.buffered + more > l.max_buffered_body_bytes_per_peer) {
      return "this client's request bodies under way would hold " +
             std::to_string(peer.buffered + more) + " bytes, over its share of " +
             std::to_string(l.max_buffered_body_bytes_per_peer) + "; retry";
    }
    while (buffered_ + more > l.max_buffered_body_bytes) {
      if (!GiveWay(peer)) return "too many large requests under way at once; retry";
    }
    c.reserved += more;
    peer.buffered += more;
    buffered_ += more;
    return "";
  }

  // The peer holding the most body bytes, when it holds more than `requester`, refuses (503) its
  // largest body still arriving; false when there is none such.
  bool GiveWay(const Peer& requester) {
    Peer* holder = nullptr;
    for (auto& [key, p] : peers_) {
      if (&p != &requester && (holder == nullptr || p.buffered > holder->buffered)) holder = &p;
    }
    if (holder == nullptr || holder->buffered <= requester.buffered) return false;
    Conn* victim = nullptr;
    for (Conn* c : holder->members) {
      if (!c->dead && c->phase == Phase::kReading && c->reserved > 0 &&
          (victim == nullptr || c->reserved > victim->reserved)) {
        victim = c;
      }
    }
    if (victim == nullptr) return false;
    evicted_.fetch_add(1);
    Refuse(*victim, 503,
           "request body dropped to make room: this client holds the most of the " +
               std::to_string(options_.limits.max_buffered_body_bytes) +
               " bytes of bodies this listener buffers; retry");
    if (!victim->dead) Watch(*victim, Interest(*victim));
    return true;
  }

  void OnEvent(Conn& c, uint32_t events) {
    switch (c.phase) {
      case Phase::kHandshake:
        Handshake(c);
        break;
      case Phase::kWaiting:
      case Phase::kReading:
        if ((events & EPOLLOUT) != 0 && c.out_off < c.out.size()) Flush(c);  // 100 Continue
        if (!c.dead) ReadRequest(c);
        break;
      case Phase::kWriting:
        Flush(c);
        break;
      case Phase::kLingering:
        Drain(c);
        break;
      case Phase::kBusy:
        break;
    }
    if (!c.dead) Watch(c, Interest(c));
  }

  uint32_t Interest(const Conn& c) const {
    switch (c.phase) {
      case Phase::kHandshake:
      case Phase::kWriting:
        return c.io->blocked_on();
      case Phase::kWaiting:
      case Phase::kReading:
        return EPOLLIN | (c.out_off < c.out.size() || c.read_wants_write ? uint32_t{EPOLLOUT} : 0u);
      case Phase::kLingering:
        return EPOLLIN;
      case Phase::kBusy:
        return 0;
    }
    return 0;
  }

  void Handshake(Conn& c) {
    const IoResult r = c.io->Handshake();
    if (r == IoResult::kWouldBlock) return;
    if (r != IoResult::kOk) {
      Close(c);
      return;
    }
    // The first request's deadline still counts from the accept: handshake and request together.
    c.phase = Phase::kWaiting;
    ReadRequest(c);
  }

  void ReadRequest(Conn& c) {
    const HttpLimits& l = options_.limits;
    for (int i = 0; i < kReadsPerEvent; ++i) {
      if (c.phase != Phase::kWaiting && c.phase != Phase::kReading) return;
      // Before the head is whole, read no further than one byte past its limit.
      const size_t room = c.have_head
                              ? kReadChunk
                              : std::min(kReadChunk, l.max_head_bytes + 1 -
                                                         std::min(c.in.size(), l.max_head_bytes));
      const size_t old = c.in.size();
      size_t got = 0;
      // Into one buffer of the I/O thread, then only what came: a connection holds what it sent,
      // not a read buffer (a thousand slow clients a byte each hold a thousand bytes).
      const IoResult r = c.io->Read(read_buffer_.data(), room, got);
      c.in.append(read_buffer_.data(), got);
      c.read_wants_write = r == IoResult::kWouldBlock && c.io->blocked_on() == EPOLLOUT;
      if (r == IoResult::kWouldBlock) return;
      if (r != IoResult::kOk) {
        Close(c);  // the client went away (or broke TLS): nobody to answer
        return;
      }
      // A head parses only once its blank line is in: skip the parse until a newline arrives.
      if (!c.have_head && c.in.find('\n', old) == std::string::npos &&
          c.in.size() <= l.max_head_bytes) {
        if (c.phase == Phase::kWaiting) StartRequest(c);
        continue;
      }
      Advance(c);
    }
    // Read budget spent with bytes perhaps still waiting (TLS may hold them, unseen by epoll).
    ready_.push_back(c.id);
  }

  void StartRequest(Conn& c) {
    c.phase = Phase::kReading;
    c.active = Clock::now();
    c.deadline = c.active + options_.limits.request_timeout;
  }

  // Parses what has arrived; dispatches a request once whole, refuses one over the limits.
  void Advance(Conn& c) {
    const HttpLimits& l = options_.limits;
    if (c.phase == Phase::kWaiting && !c.in.empty()) StartRequest(c);
    if (c.phase != Phase::kReading) return;
    if (!c.have_head) {
      HeadParse p = ParseRequestHead(c.in, l.max_head_bytes);
      if (p.state == ParseState::kNeedMore) return;
      if (p.state == ParseState::kError) {
        Refuse(c, p.error.status, p.error.message);
        return;
      }
      c.head = std::move(p.head);
      c.have_head = true;
      c.in.erase(0, p.head_bytes);
      // Refused before a byte of the body is read: nothing of it is ever buffered.
      if (c.head.content_length > l.max_body_bytes) {
        Refuse(c, 413,
               "request body of " + std::to_string(c.head.content_length) +
                   " bytes is over this listener's limit of " + std::to_string(l.max_body_bytes) +
                   " bytes");
        return;
      }
      // A declared body counts whole from its head (it is coming); a chunked one by the bytes
      // that have come (below): no more than what arrived is held for a client that trickles.
      if (std::string why = Charge(c, c.head.chunked ? 0 : c.head.content_length); !why.empty()) {
        Refuse(c, 503, why);
        return;
      }
      if (c.head.chunked) c.chunked.emplace(l.max_body_bytes, l.max_head_bytes);
      if (c.head.expect_continue && (c.head.chunked || c.head.content_length > 0) && c.in.empty()) {
        c.out = "HTTP/1.1 100 Continue\r\n\r\n";
        c.out_off = 0;
        Flush(c);
        if (c.dead) return;
      }
    }
    if (c.chunked) {
      size_t used = 0;
      const ParseState s = c.chunked->Feed(c.in, used, c.body);
      c.in.erase(0, used);
      if (s == ParseState::kError) {
        Refuse(c, c.chunked->error().status, c.chunked->error().message);
        return;
      }
      if (std::string why = Charge(c, c.body.size() + c.in.size()); !why.empty()) {
        Refuse(c, 503, why);
        return;
      }
      if (s == ParseState::kNeedMore) return;
    } else {
      const auto length = static_cast<size_t>(c.head.content_length);
      if (c.in.size() < length) return;
      if (c.in.size() == length) {
        c.body = std::move(c.in);
        c.in.clear();
      } else {
        c.body.assign(c.in, 0, length);
        c.in.erase(0, length);
      }
    }
    Dispatch(c);
  }

  void Dispatch(Conn& c) {
    c.head_only = c.head.method == "HEAD";
    const std::string& want = c.head_only ? std::string("GET") : c.head.method;
    const RouteEntry* route = nullptr;
    std::string allow;
    for (const RouteEntry& r : routes_) {
      if (r.path != c.head.path) continue;
      allow += (allow.empty() ? "" : ", ") + r.method + (r.method == "GET" ? ", HEAD" : "");
      if (r.method == want) route = &r;
    }
    const bool close = !c.head.keep_alive;
    if (route == nullptr) {
      HttpResponse r = allow.empty()
                           ? HttpResponse::Text(404, "no such path: " + c.head.path)
                           : HttpResponse::Text(405, c.head.method + " is not served on " +
                                                         c.head.path + " (allowed: " + allow + ")");
      if (!allow.empty()) r.headers.emplace_back("Allow", allow);
      Answer(c, r, close);
      return;
    }
    HttpRequest request{std::move(c.head.method),  std::move(c.head.path), std::move(c.head.query),
                        std::move(c.head.headers), std::move(c.body),      c.peer_address};
    c.body.clear();
    if (route->run_on == RunOn::kIoThread) {
      Answer(c, Call(route->handler, request), close);
      return;
    }
    c.phase = Phase::kBusy;
    Watch(c, 0);
    const uint64_t id = c.id;
    const HttpHandler* handler = &route->handler;
    const bool posted = pool_->TryPost([this, id, handler, request = std::move(request)]() {
      HttpResponse response = Call(*handler, request);
      {
        std::lock_guard lock(answers_mu_);
        answers_.emplace_back(id, std::move(response));
      }
      Wake();
    });
    if (!posted) {
      busy_.fetch_add(1);
      HttpResponse r = HttpResponse::Text(
          503, "all " + std::to_string(options_.worker_threads) + " workers busy and " +
                   std::to_string(options_.limits.max_queued_requests) +
                   " requests waiting; retry");
      r.headers.emplace_back("Retry-After", "1");
      Answer(c, r, close);
      LogRefusal(last_busy_log_, "request refused: workers busy", options_.what);
    }
  }

  void TakeAnswers() {
    std::vector<std::pair<uint64_t, HttpResponse>> answers;
    {
      std::lock_guard lock(answers_mu_);
      answers.swap(answers_);
    }
    for (auto& [id, response] : answers) {
      Conn* c = Find(id);
      if (c != nullptr && c->phase == Phase::kBusy) {
        Answer(*c, response, !c->head.keep_alive);
        if (!c->dead) Watch(*c, Interest(*c));
      }
    }
  }

  void Refuse(Conn& c, int status, const std::string& message) {
    if (status == 413 || status == 431) too_large_.fetch_add(1);
    if (status == 503) busy_.fetch_add(1);
    HttpResponse r = HttpResponse::Text(status, message);
    if (status == 503) r.headers.emplace_back("Retry-After", "1");
    // What follows in the stream is not a request boundary we can trust: close after answering.
    Answer(c, r, /*close=*/true);
  }

  void Answer(Conn& c, const HttpResponse& response, bool close) {
    Release(c);
    close = close || stopping_.load();
    c.close_after = close;
    if (c.out_off > 0) {
      c.out.erase(0, c.out_off);
      c.out_off = 0;
    }
    c.out += SerializeResponse(response, close, c.head_only);
    c.phase = Phase::kWriting;
    c.deadline = Clock::now() + options_.limits.write_timeout;
    Flush(c);
  }

  void Flush(Conn& c) {
    while (c.out_off < c.out.size()) {
      size_t put = 0;
      const IoResult r = c.io->Write(c.out.data() + c.out_off, c.out.size() - c.out_off, put);
      if (r == IoResult::kWouldBlock) return;
      if (r != IoResult::kOk) {
        Close(c);
        return;
      }
      c.out_off += put;
    }
    c.out.clear();
    c.out_off = 0;
    if (c.phase != Phase::kWriting) return;  // an interim 100 Continue, while reading
    if (c.close_after) {
      Linger(c);
      return;
    }
    c.have_head = false;
    c.head = RequestHead{};
    c.chunked.reset();
    c.body.clear();
    c.head_only = false;
    c.phase = Phase::kWaiting;
    c.active = Clock::now();
    c.deadline = c.active + options_.limits.idle_timeout;
    // Bytes already here (a pipelined request, or held inside TLS) show no readiness: look at
    // them on the next turn of the loop (not from here, which may be deep in a call chain).
    ready_.push_back(c.id);
  }

  void ResumeReady() {
    std::vector<uint64_t> ready;
    ready.swap(ready_);
    for (const uint64_t id : ready) {
      Conn* c = Find(id);
      if (c == nullptr || (c->phase != Phase::kWaiting && c->phase != Phase::kReading)) continue;
      Advance(*c);
      if (!c->dead) ReadRequest(*c);
      if (!c->dead) Watch(*c, Interest(*c));
    }
  }

  void Linger(Conn& c) {
    Release(c);
    c.io->ShutdownWrite();
    c.in.clear();
    c.in.shrink_to_fit();
    c.body.clear();
    c.body.shrink_to_fit();
    c.phase = Phase::kLingering;
    c.deadline = Clock::now() + options_.limits.linger;
    Drain(c);
  }

  void Drain(Conn& c) {
    for (int i = 0; i < kReadsPerEvent; ++i) {
      size_t got = 0;
      const IoResult r = c.io->Read(read_buffer_.data(), read_buffer_.size(), got);
      if (r == IoResult::kWouldBlock) return;
      c.drained += got;
      if (r != IoResult::kOk || c.drained > options_.limits.linger_bytes) {
        Close(c);
        return;
      }
    }
  }

  void Sweep(Clock::time_point now) {
    for (auto& [id, conn] : conns_) {
      Conn& c = *conn;
      if (c.dead || c.phase == Phase::kBusy || now < c.deadline) continue;
      timed_out_.fetch_add(1);
      if (c.phase == Phase::kReading) {
        const std::string message = "request not received whole within " +
                                    std::to_string(options_.limits.request_timeout.count()) + " ms";
        Answer(c, HttpResponse::Text(408, message), /*close=*/true);
        // A client that does not read gets no more time for the 408 than a lingering close.
        if (!c.dead && c.phase == Phase::kWriting) c.deadline = now + options_.limits.linger;
        if (!c.dead) Watch(c, Interest(c));
      } else {
        Close(c);
      }
    }
  }

  void Release(Conn& c) {
    buffered_ -= c.reserved;
    if (c.peer != nullptr) c.peer->buffered -= c.reserved;
    c.reserved = 0;
  }

  void Close(Conn& c) {
    if (c.dead) return;
    c.dead = true;
    Watch(c, 0);
    c.io.reset();  // TLS state goes before its socket
    (void)::close(c.fd);
    Release(c);
    if (c.peer != nullptr) Detach(c);
    dead_.push_back(c.id);
  }

  void Reap() {
    for (const uint64_t id : dead_) conns_.erase(id);
    if (!dead_.empty()) open_.store(static_cast<int>(conns_.size()));
    dead_.clear();
  }

  // ---- epoll registration ----------------------------------------------------------------------

  bool Register(int fd, uint64_t id, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id;
    return ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) == 0;
  }

  bool Modify(int fd, uint64_t id, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id;
    return ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) == 0;
  }

  // A connection not watched at all (0) is out of epoll: a peer's reset reports EPOLLHUP and
  // EPOLLERR whatever the mask, which would wake the loop over and over while a worker runs.
  void Watch(Conn& c, uint32_t events) {
    if (events == c.watched) return;
    bool ok = true;
    if (events == 0) {
      ok = ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr) == 0;
    } else {
      ok = c.watched == 0 ? Register(c.fd, c.id, events) : Modify(c.fd, c.id, events);
    }
    c.watched = ok ? events : c.watched;
    if (!ok && events != 0) Close(c);
  }

  void Wake() {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }

  void CloseFds() {
    for (int* fd : {&listen_fd_, &epoll_fd_, &wake_fd_}) {
      if (*fd >= 0) (void)::close(*fd);
      *fd = -1;
    }
  }

  void LogRefusal(Clock::time_point& last, const char* message, const std::string& detail) {
    const Clock::time_point now = Clock::now();
    if (last != Clock::time_point{} && now - last < kRefusalLogEvery) return;
    last = now;
    log::Warn(message, {{"listener", options_.what}, {"detail", detail}});
  }

  HttpServerOptions options_;
  std::vector<RouteEntry> routes_;
  milliseconds sweep_every_{100};
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int port_ = 0;
  std::unique_ptr<WorkerPool> pool_;
  std::thread io_thread_;
  std::atomic<bool> stopping_{false};

  std::mutex tls_mu_;
  std::shared_ptr<ssl_ctx_st> tls_;

  std::mutex answers_mu_;
  std::vector<std::pair<uint64_t, HttpResponse>> answers_;

  // The I/O thread's alone.
  std::vector<char> read_buffer_ = std::vector<char>(kReadChunk);
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  std::vector<uint64_t> ready_;
  std::vector<uint64_t> dead_;
  uint64_t next_id_ = 2;
  size_t buffered_ = 0;
  int live_ = 0;  // connections open and not closed (conns_ keeps closed ones until Reap)
  // Peers by key; their addresses are stable (node-based map), so connections point at them.
  std::unordered_map<std::string, Peer> peers_;
  std::set<std::pair<int, Peer*>> by_conns_;  // peers holding connections, by how many
  bool accept_paused_ = false;
  Clock::time_point accept_resume_;
  Clock::time_point last_accept_error_log_, last_capacity_log_, last_busy_log_, last_evict_log_;

  std::atomic<uint64_t> accepted_{0}, refused_{0}, evicted_{0}, timed_out_{0}, too_large_{0},
      busy_{0};
  std::atomic<int> open_{0}, peers_count_{0};
};

HttpServer::HttpServer(HttpServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpServer::~HttpServer() = default;

void HttpServer::Route(std::string method, std::string path, HttpHandler handler, RunOn run_on) {
  impl_->Route(std::move(method), std::move(path), std::move(handler), run_on);
}

Result<int> HttpServer::Start(const std::string& host, int port) {
  return impl_->Start(host, port);
}

void HttpServer::Stop() {
  impl_->Stop();
}

void HttpServer::SetTlsContext(std::shared_ptr<ssl_ctx_st> ctx) {
  impl_->SetTlsContext(std::move(ctx));
}

int HttpServer::port() const {
  return impl_->port();
}

HttpServerStats HttpServer::stats() const {
  return impl_->stats();
}

std::string HttpServer::Saturation() const {
  return impl_->Saturation();
}

}  // namespace vgpu::net
