#include "net/http_listen.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

namespace vgpu::net {
namespace {

// A non-blocking connect to 127.0.0.1:port, closed on destruction.
class PendingConnect {
 public:
  explicit PendingConnect(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    // Non-blocking: EINPROGRESS is the expected answer; Established() tells how it went.
    (void)::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  }
  ~PendingConnect() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  PendingConnect(const PendingConnect&) = delete;
  PendingConnect& operator=(const PendingConnect&) = delete;
  PendingConnect(PendingConnect&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }

  [[nodiscard]] bool Established() const {
    tcp_info info{};
    socklen_t len = sizeof(info);
    return ::getsockopt(fd_, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 &&
           info.tcpi_state == TCP_ESTABLISHED;
  }

 private:
  int fd_;
};

TEST(HttpListen, ServesOnTheBoundPortUntilStopped) {
  httplib::Server server;
  server.Get("/ping", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("pong", "text/plain");
  });
  std::thread serving;
  Result<int> port = StartServing(server, "127.0.0.1", 0, "test server", serving);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  httplib::Client client("127.0.0.1", *port);
  httplib::Result res = client.Get("/ping");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->body, "pong");
  server.stop();
  serving.join();
}

// kube-scheduler binds pods concurrently: a burst of connections must all complete their
// handshakes while the server's workers are busy and nothing is accepting (httplib's own backlog
// of 5 let only 6 through and dropped the rest for a SYN retransmission or longer).
TEST(HttpListen, AcceptQueueHoldsABurstOfConnections) {
  httplib::Server server;
  Result<int> port = BindWithDeepBacklog(server, "127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  constexpr int kBurst = 100;
  std::vector<PendingConnect> clients;
  clients.reserve(kBurst);
  for (int i = 0; i < kBurst; ++i) {
    clients.emplace_back(*port);
  }

  int established = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    established = 0;
    for (const PendingConnect& c : clients) {
      established += c.Established() ? 1 : 0;
    }
    if (established == kBurst) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(established, kBurst);
  server.stop();
}

TEST(HttpListen, AnAddressThatIsNotLocalIsAClearError) {
  httplib::Server server;
  Result<int> port = BindWithDeepBacklog(server, "203.0.113.7", 0);  // TEST-NET-3
  ASSERT_FALSE(port.ok());
  EXPECT_NE(port.status().ToString().find("cannot listen on 203.0.113.7:0"), std::string::npos)
      << port.status().ToString();
}

TEST(HttpListen, APortInUseIsAClearError) {
  // A plain socket without SO_REUSEPORT holds the port, so httplib's bind must fail.
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(holder, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(holder, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int held = ntohs(addr.sin_port);

  httplib::Server server;
  Result<int> port = BindWithDeepBacklog(server, "127.0.0.1", held);
  ::close(holder);
  ASSERT_FALSE(port.ok());
  EXPECT_NE(port.status().ToString().find("cannot listen on 127.0.0.1:" + std::to_string(held)),
            std::string::npos)
      << port.status().ToString();
}

}  // namespace
}  // namespace vgpu::net
