#include "load_clients.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

namespace vgpu::bench {
namespace {

using Clock = std::chrono::steady_clock;

// A blocking connection to 127.0.0.1:port whose calls give up after `timeout_s`; -1 on failure.
int Connect(int port, int timeout_s) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{timeout_s, 0};
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  (void)::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const char* data, size_t len) {
  while (len > 0) {
    const ssize_t n = ::send(fd, data, len, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

// ---- HeldConnections ----------------------------------------------------------------------------

HeldConnections::HeldConnections(int port, int count, Kind kind) : port_(port), kind_(kind) {
  fds_.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) fds_.push_back(Open());
  thread_ = std::thread([this] { Run(); });
}

HeldConnections::~HeldConnections() {
  stop_.store(true);
  thread_.join();
  for (int fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
}

int HeldConnections::Open() {
  const int fd = Connect(port_, 1);
  if (fd < 0) {
    failed_opens_.fetch_add(1);
    return -1;
  }
  if (kind_ == Kind::kSlowLoris) {
    static const std::string kStart = "POST /filter HTTP/1.1\r\nHost: bench\r\nX-Slow: ";
    (void)SendAll(fd, kStart.data(), kStart.size());
  }
  return fd;
}

void HeldConnections::Run() {
  std::vector<pollfd> polled(fds_.size());
  size_t next_byte = 0;  // slow-loris: the next connection to send a byte on
  const size_t per_tick = fds_.size() / 20 + 1;  // 50 ms ticks: each connection once a second
  while (!stop_.load()) {
    for (size_t i = 0; i < fds_.size(); ++i) polled[i] = {fds_[i], POLLIN, 0};
    (void)::poll(polled.data(), polled.size(), 50);
    for (size_t i = 0; i < fds_.size() && !stop_.load(); ++i) {
      if (fds_[i] >= 0 && polled[i].revents == 0) continue;
      // Closed or answered (408) by the server, or never opened: replace it.
      if (fds_[i] >= 0) {
        ::close(fds_[i]);
        reopened_.fetch_add(1);
      }
      fds_[i] = Open();
    }
    if (kind_ == Kind::kSlowLoris) {
      for (size_t k = 0; k < per_tick && !fds_.empty(); ++k) {
        const int fd = fds_[next_byte];
        next_byte = (next_byte + 1) % fds_.size();
        if (fd >= 0) (void)::send(fd, "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      }
    }
  }
}

// ---- OversizedFlood -----------------------------------------------------------------------------

OversizedFlood::OversizedFlood(int port, int clients, size_t body_bytes)
    : port_(port), body_bytes_(body_bytes) {
  for (int i = 0; i < clients; ++i) threads_.emplace_back([this] { Run(); });
}

OversizedFlood::~OversizedFlood() {
  stop_.store(true);
  for (std::thread& t : threads_) t.join();
}

void OversizedFlood::Run() {
  const std::string chunk(64 << 10, ' ');
  const std::string head =
      "POST /filter HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(body_bytes_) + "\r\n\r\n";
  while (!stop_.load()) {
    const int fd = Connect(port_, 10);
    if (fd < 0) {
      no_answer_.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    attempts_.fetch_add(1);
    bool sending = SendAll(fd, head.data(), head.size());
    for (size_t sent = 0; sending && sent < body_bytes_ && !stop_.load(); sent += chunk.size()) {
      sending = SendAll(fd, chunk.data(), std::min(chunk.size(), body_bytes_ - sent));
    }
    char buf[256] = {};
    const ssize_t n = ::recv(fd, buf, sizeof buf - 1, 0);
    if (n >= 12 && std::string(buf, 12) == "HTTP/1.1 413") {
      answered_413_.fetch_add(1);
    } else if (n > 0) {
      answered_other_.fetch_add(1);
    } else {
      no_answer_.fetch_add(1);
    }
    ::close(fd);
  }
}

// ---- FilterLoad ---------------------------------------------------------------------------------

FilterLoad::FilterLoad(int port, int clients, std::string body)
    : port_(port), body_(std::move(body)) {
  for (int i = 0; i < clients; ++i) threads_.emplace_back([this] { Run(); });
}

FilterLoad::~FilterLoad() {
  stop_.store(true);
  for (std::thread& t : threads_) t.join();
}

std::vector<double> FilterLoad::latencies_ms() const {
  std::lock_guard lock(mu_);
  return ms_;
}

void FilterLoad::Run() {
  httplib::Client c("127.0.0.1", port_);
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);  // as Go's clients: no Nagle delay between head and body
  c.set_read_timeout(10);
  while (!stop_.load()) {
    const Clock::time_point start = Clock::now();
    httplib::Result r = c.Post("/filter", body_, "application/json");
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (r && r->status == 200) {
      ok_.fetch_add(1);
      std::lock_guard lock(mu_);
      ms_.push_back(ms);
    } else {
      errors_.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

}  // namespace vgpu::bench
