#include "net/http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "net/tls_server_context.h"
#include "tests/net/raw_http_client.h"

namespace vgpu::net {
namespace {

using RawClient = testing::RawHttpClient;
using std::chrono::milliseconds;

// Short deadlines, so that tests see them pass; a small body limit.
HttpLimits ShortLimits() {
  HttpLimits l;
  l.max_body_bytes = 1024;
  l.request_timeout = milliseconds(300);
  l.idle_timeout = milliseconds(300);
  l.write_timeout = milliseconds(1000);
  l.linger = milliseconds(200);
  return l;
}

// Long deadlines: nothing closes while a test holds connections open.
HttpLimits LongLimits() {
  HttpLimits l;
  l.max_body_bytes = 1024;
  l.request_timeout = milliseconds(60'000);
  l.idle_timeout = milliseconds(60'000);
  return l;
}

std::string Post(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

const std::string kHealthz = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";

class HttpServerTest : public ::testing::Test {
 protected:
  void TearDown() override {
    Open();
    if (server_) server_->Stop();
  }

  void StartServer(HttpLimits limits, int workers = 2, std::shared_ptr<ssl_ctx_st> tls = nullptr) {
    HttpServerOptions o;
    o.what = "test listener";
    o.worker_threads = workers;
    o.limits = limits;
    o.tls = std::move(tls);
    server_ = std::make_unique<HttpServer>(std::move(o));
    server_->Route(
        "GET", "/healthz", [](const HttpRequest&) { return HttpResponse::Text(200, "ok"); },
        RunOn::kIoThread);
    server_->Route("POST", "/echo", [](const HttpRequest& r) {
      HttpResponse res;
      res.body = r.body;
      return res;
    });
    server_->Route("GET", "/throw",
                   [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("boom"); });
    // Holds a worker until Open().
    server_->Route("GET", "/block", [this](const HttpRequest&) {
      std::unique_lock lock(gate_mu_);
      ++blocked_;
      gate_cv_.notify_all();
      gate_cv_.wait(lock, [this] { return open_; });
      return HttpResponse::Text(200, "released");
    });
    Result<int> port = server_->Start("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    port_ = *port;
  }

  void Open() {
    std::lock_guard lock(gate_mu_);
    open_ = true;
    gate_cv_.notify_all();
  }

  // Waits (at most 10 s) until `n` requests are inside /block.
  bool WaitBlocked(int n) {
    std::unique_lock lock(gate_mu_);
    return gate_cv_.wait_for(lock, std::chrono::seconds(10), [&] { return blocked_ >= n; });
  }

  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
  std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  bool open_ = false;
  int blocked_ = 0;
};

TEST_F(HttpServerTest, RoutesMethodsAndHandlerErrors) {
  StartServer(LongLimits());
  httplib::Client c("127.0.0.1", port_);
  auto r = c.Get("/healthz");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "ok\n");
  r = c.Head("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "");
  r = c.Post("/healthz", "", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "GET, HEAD");
  r = c.Get("/nothing");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->body, "no such path: /nothing\n");
  r = c.Get("/throw");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(r->body, "internal error: boom\n");
  const std::string body(1000, 'x');
  r = c.Post("/echo", body, "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, body);
}

TEST_F(HttpServerTest, OversizedBodyIsRefusedWith413BeforeItIsSent) {
  StartServer(ShortLimits());
  RawClient raw(port_);
  ASSERT_TRUE(raw.connected());
  // Only the head: the answer must not wait for a body it will never read.
  ASSERT_TRUE(raw.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1048576\r\n\r\n"));
  const RawClient::Response r = raw.Read();
  EXPECT_EQ(r.status, 413);
  EXPECT_NE(r.body.find("request body of 1048576 bytes is over this listener's limit of 1024"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.head.find("Connection: close"), std::string::npos) << r.head;
  EXPECT_TRUE(raw.WaitClosed());
  EXPECT_EQ(server_->stats().too_large, 1u);

  // A client that sends the body anyway (a small one here) still reads the answer.
  httplib::Client c("127.0.0.1", port_);
  auto res = c.Post("/echo", std::string(2000, 'x'), "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 413);
  // At the limit is fine.
  res = c.Post("/echo", std::string(1024, 'y'), "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
}

TEST_F(HttpServerTest, ChunkedBodyOverTheLimitIs413) {
  StartServer(ShortLimits());
  RawClient raw(port_);
  ASSERT_TRUE(raw.connected());
  ASSERT_TRUE(raw.Send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" +
                       std::string("200\r\n") + std::string(512, 'a') + "\r\n" +
                       std::string("201\r\n")));
  const RawClient::Response r = raw.Read();
  EXPECT_EQ(r.status, 413);
  EXPECT_NE(r.body.find("over the limit of 1024 bytes"), std::string::npos) << r.body;

  RawClient ok(port_);
  ASSERT_TRUE(
      ok.Send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
              "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
  const RawClient::Response echo = ok.Read();
  EXPECT_EQ(echo.status, 200);
  EXPECT_EQ(echo.body, "hello world");
}

TEST_F(HttpServerTest, ExpectContinueGetsTheInterimAnswerOnlyWithinTheLimit) {
  StartServer(ShortLimits());
  RawClient raw(port_);
  ASSERT_TRUE(raw.Send(
      "POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
  EXPECT_EQ(raw.Read().status, 100);
  ASSERT_TRUE(raw.Send("hello"));
  const RawClient::Response r = raw.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello");

  RawClient big(port_);
  ASSERT_TRUE(big.Send(
      "POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n"));
  EXPECT_EQ(big.Read().status, 413);
}

TEST_F(HttpServerTest, ASilentConnectionIsClosedAfterTheRequestTimeout) {
  StartServer(ShortLimits());
  RawClient raw(port_);
  ASSERT_TRUE(raw.connected());
  EXPECT_TRUE(raw.WaitClosed()) << "the server kept a connection that sent nothing";
  EXPECT_GE(server_->stats().timed_out, 1u);
}

TEST_F(HttpServerTest, ATricklingRequestGets408AndIsClosed) {
  StartServer(ShortLimits());
  RawClient raw(port_);
  ASSERT_TRUE(raw.Send("POST /echo HTTP/1.1\r\nHost: t\r\nX-Slow: "));
  // One byte every 20 ms: each byte would restart a per-read timeout; the request's does not.
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    while (!stop.load() && raw.Send("a")) std::this_thread::sleep_for(milliseconds(20));
  });
  const RawClient::Response r = raw.Read();
  stop.store(true);
  trickle.join();
  EXPECT_EQ(r.status, 408);
  EXPECT_EQ(r.body, "request not received whole within 300 ms\n");
  EXPECT_TRUE(raw.WaitClosed());
}

TEST_F(HttpServerTest, AnIdleKeptAliveConnectionIsClosedAfterTheIdleTimeout) {
  StartServer(ShortLimits());
  RawClient raw(port_);
  ASSERT_TRUE(raw.Send(kHealthz));
  EXPECT_EQ(raw.Read().status, 200);
  EXPECT_TRUE(raw.WaitClosed());
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  StartServer(LongLimits());
  RawClient raw(port_);
  ASSERT_TRUE(raw.Send(kHealthz + Post("/echo", "one") + Post("/echo", "two") + kHealthz));
  EXPECT_EQ(raw.Read().body, "ok\n");
  EXPECT_EQ(raw.Read().body, "one");
  EXPECT_EQ(raw.Read().body, "two");
  EXPECT_EQ(raw.Read().body, "ok\n");
}

TEST_F(HttpServerTest, AMalformedRequestIsAnswered400AndClosed) {
  StartServer(LongLimits());
  RawClient raw(port_);
  ASSERT_TRUE(raw.Send("HELLO\r\n\r\n"));
  const RawClient::Response r = raw.Read();
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("malformed request line"), std::string::npos) << r.body;
  EXPECT_TRUE(raw.WaitClosed());
}

// The starvation a pool of connection threads suffers: every worker busy, hundreds of clients
// connected and silent or trickling. /healthz must still answer; so must a worker route once a
// worker is free.
TEST_F(HttpServerTest, HealthAnswersWhileWorkersAreBusyAndManyConnectionsIdle) {
  StartServer(LongLimits(), /*workers=*/1);
  RawClient blocked(port_);
  ASSERT_TRUE(blocked.Send("GET /block HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(WaitBlocked(1));
  std::vector<RawClient> idle;
  for (int i = 0; i < 300; ++i) {
    idle.emplace_back(port_);
    ASSERT_TRUE(idle.back().connected()) << i;
    if (i % 3 == 0) {
      ASSERT_TRUE(idle.back().Send("POST /echo HTTP/1.1\r\nHost: t\r\n"));  // never finished
    }
  }
  httplib::Client c("127.0.0.1", port_);
  c.set_connection_timeout(5);
  c.set_read_timeout(5);
  auto health = c.Get("/healthz");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  Open();
  EXPECT_EQ(blocked.Read().body, "released\n");
  auto echo = c.Post("/echo", "after", "text/plain");
  ASSERT_TRUE(echo) << httplib::to_string(echo.error());
  EXPECT_EQ(echo->body, "after");
  EXPECT_GE(server_->stats().open, 300);
}

TEST_F(HttpServerTest, AFullQueueIsAnswered503AtOnce) {
  HttpLimits l = LongLimits();
  l.max_queued_requests = 0;  // the one worker busy is "full"
  StartServer(l, /*workers=*/1);
  RawClient running(port_);
  ASSERT_TRUE(running.Send("GET /block HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(WaitBlocked(1));
  RawClient refused(port_);
  ASSERT_TRUE(refused.Send(Post("/echo", "x")));
  const RawClient::Response r = refused.Read();
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("workers busy"), std::string::npos) << r.body;
  EXPECT_NE(r.head.find("Retry-After: 1"), std::string::npos) << r.head;
  // The probe does not need a worker.
  ASSERT_TRUE(refused.Send(kHealthz));
  EXPECT_EQ(refused.Read().status, 200);
  Open();
  EXPECT_EQ(running.Read().status, 200);
  EXPECT_EQ(server_->stats().busy, 1u);
}

// A full listener makes room: the peer holding the most (here the only one) closes its longest
// idle connection for the newcomer.
TEST_F(HttpServerTest, AFullListenerClosesTheLongestIdleConnectionOfThePeerHoldingTheMost) {
  HttpLimits l = LongLimits();
  l.max_connections = 3;
  StartServer(l);
  std::vector<RawClient> held;
  for (int i = 0; i < 3; ++i) {
    held.emplace_back(port_);
    ASSERT_TRUE(held.back().Send(kHealthz));
    EXPECT_EQ(held.back().Read().status, 200);  // accepted and served: open and idle
  }
  RawClient newcomer(port_);
  ASSERT_TRUE(newcomer.Send(kHealthz));
  EXPECT_EQ(newcomer.Read().status, 200);
  EXPECT_TRUE(held.front().WaitClosed()) << "the longest idle was not the one closed";
  EXPECT_EQ(server_->stats().evicted, 1u);
  EXPECT_EQ(server_->stats().refused_connections, 0u);
}

// Only connections that owe their client nothing give way: with the one connection running a
// handler, a newcomer is refused at once.
TEST_F(HttpServerTest, ANewConnectionIsRefusedWhenNoneCanGiveWay) {
  HttpLimits l = LongLimits();
  l.max_connections = 1;
  StartServer(l, /*workers=*/1);
  RawClient running(port_);
  ASSERT_TRUE(running.Send("GET /block HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(WaitBlocked(1));
  RawClient extra(port_);
  const RawClient::Response r = extra.Read();
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.body, "over 1 connections open; retry\n");
  EXPECT_EQ(server_->stats().refused_connections, 1u);
  Open();
  EXPECT_EQ(running.Read().body, "released\n");
}

// Issue 42, item 4: one client with thousands of idle connections took probes and requests down
// (no per-client share of the cap). Here the cap is 64 and one peer opens 200: it keeps 16, its
// newest, and another peer is served at once.
TEST_F(HttpServerTest, OnePeersIdleConnectionsDoNotCrowdOutAnother) {
  HttpLimits l = LongLimits();
  l.max_connections = 64;
  l.max_connections_per_peer = 16;
  StartServer(l);
  std::vector<RawClient> hog;
  for (int i = 0; i < 200; ++i) {
    hog.emplace_back(port_, 10, "127.0.0.2");
    ASSERT_TRUE(hog.back().connected()) << i;
  }
  // Its last connection is served: a peer at its share replaces its own idle ones.
  ASSERT_TRUE(hog.back().Send(kHealthz));
  EXPECT_EQ(hog.back().Read().status, 200);
  EXPECT_LE(server_->stats().open, 16);
  RawClient good(port_, 10, "127.0.0.1");
  ASSERT_TRUE(good.Send(kHealthz));
  EXPECT_EQ(good.Read().status, 200);
  ASSERT_TRUE(good.Send(Post("/echo", "served")));
  EXPECT_EQ(good.Read().body, "served");
  EXPECT_GE(server_->stats().evicted, 184u);
}

// ... and many peers that fill the listener together give way to a newcomer.
TEST_F(HttpServerTest, ManyPeersFillingTheListenerGiveWayToANewcomer) {
  HttpLimits l = LongLimits();
  l.max_connections = 32;
  l.max_connections_per_peer = 8;
  StartServer(l);
  std::vector<RawClient> crowd;
  for (int peer = 2; peer <= 9; ++peer) {
    const std::string source = "127.0.0." + std::to_string(peer);
    for (int i = 0; i < 8; ++i) {
      crowd.emplace_back(port_, 10, source.c_str());
      ASSERT_TRUE(crowd.back().connected());
    }
  }
  RawClient good(port_, 10, "127.0.0.1");
  ASSERT_TRUE(good.Send(kHealthz));
  EXPECT_EQ(good.Read().status, 200);
  ASSERT_TRUE(good.Send(Post("/echo", "served")));
  EXPECT_EQ(good.Read().body, "served");
  EXPECT_LE(server_->stats().open, 32);
}

// Body budgets for these tests: 1 MiB a body, 2 MiB a peer, 4 MiB the listener.
HttpLimits BodyLimits() {
  HttpLimits l = LongLimits();
  l.max_body_bytes = size_t{1} << 20;
  l.max_buffered_body_bytes_per_peer = size_t{2} << 20;
  l.max_buffered_body_bytes = size_t{4} << 20;
  return l;
}

std::string ChunkedHead(const std::string& path) {
  return "POST " + path + " HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
}

// Issue 42, item 3: each chunked upload reserved the whole body limit from its head, so that a few
// slow ones spent the listener's budget and every POST got 503 while /healthz said 200. Now a
// chunked body holds what has arrived.
TEST_F(HttpServerTest, SlowChunkedUploadsHoldOnlyWhatTheySent) {
  StartServer(BodyLimits());
  std::vector<RawClient> slow;
  for (int peer = 2; peer <= 9; ++peer) {
    const std::string source = "127.0.0." + std::to_string(peer);
    slow.emplace_back(port_, 10, source.c_str());
    ASSERT_TRUE(slow.back().Send(ChunkedHead("/echo") + "a\r\n0123456789\r\n"));
  }
  RawClient good(port_, 10, "127.0.0.1");
  // The body of one of them served whole meanwhile, then a good one.
  ASSERT_TRUE(slow.front().Send("0\r\n\r\n"));
  EXPECT_EQ(slow.front().Read().body, "0123456789");
  ASSERT_TRUE(good.Send(Post("/echo", std::string(100'000, 'g'))));
  const RawClient::Response r = good.Read();
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body.size(), 100'000u);
  EXPECT_EQ(server_->stats().busy, 0u);
}

// A chunked body counts as it grows: past its peer's share it is refused midway.
TEST_F(HttpServerTest, AChunkedBodyPastItsPeersShareIsRefusedMidway) {
  HttpLimits l = BodyLimits();
  l.max_buffered_body_bytes_per_peer = 64 << 10;
  StartServer(l);
  RawClient upload(port_, 10, "127.0.0.2");
  const std::string chunk = "9000\r\n" + std::string(0x9000, 'x') + "\r\n";  // 36 KiB
  ASSERT_TRUE(upload.Send(ChunkedHead("/echo") + chunk));
  (void)upload.Send(chunk);  // the server may have answered and stopped reading
  const RawClient::Response r = upload.Read();
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("over its share of 65536; retry"), std::string::npos) << r.body;
}

// A head with "Expect: 100-continue" and a body of `length` declared: the 100 answer says the
// server has read the head and counted the body.
std::string ExpectHead(size_t length) {
  return "POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: " +
         std::to_string(length) + "\r\n\r\n";
}

// One peer cannot hold more than its share of bodies declared and under way; another is served.
TEST_F(HttpServerTest, APeerOverItsBodyShareGets503AndOthersAreServed) {
  StartServer(BodyLimits());
  std::vector<RawClient> hog;
  for (int i = 0; i < 2; ++i) {
    hog.emplace_back(port_, 10, "127.0.0.2");
    ASSERT_TRUE(hog.back().Send(ExpectHead(size_t{1} << 20)));
    ASSERT_EQ(hog.back().Read().status, 100);
  }
  RawClient third(port_, 10, "127.0.0.2");
  ASSERT_TRUE(third.Send(ExpectHead(size_t{1} << 20)));
  const RawClient::Response r = third.Read();
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("over its share of 2097152; retry"), std::string::npos) << r.body;
  RawClient good(port_, 10, "127.0.0.1");
  ASSERT_TRUE(good.Send(Post("/echo", "served")));
  EXPECT_EQ(good.Read().body, "served");
}

// With the listener's budget spent by two peers, a third is served: the peer holding the most
// refuses (503) its largest body under way.
TEST_F(HttpServerTest, WithTheBudgetSpentThePeerHoldingTheMostGivesWay) {
  StartServer(BodyLimits());
  std::vector<RawClient> holders;
  for (const char* source : {"127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"}) {
    holders.emplace_back(port_, 10, source);
    ASSERT_TRUE(holders.back().Send(ExpectHead(size_t{1} << 20)));
    ASSERT_EQ(holders.back().Read().status, 100);
  }
  RawClient good(port_, 10, "127.0.0.1");
  ASSERT_TRUE(good.Send(Post("/echo", "served")));
  const RawClient::Response r = good.Read();
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "served");
  EXPECT_EQ(server_->stats().evicted, 1u);
  EXPECT_EQ(server_->stats().busy, 1u);  // the one 503, to a holder
}

// What /readyz reports: a listener whose workers and queue are full refuses requests.
TEST_F(HttpServerTest, SaturationNamesAFullQueue) {
  HttpLimits l = LongLimits();
  l.max_queued_requests = 0;
  StartServer(l, /*workers=*/1);
  EXPECT_EQ(server_->Saturation(), "");
  RawClient running(port_);
  ASSERT_TRUE(running.Send("GET /block HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(WaitBlocked(1));
  EXPECT_EQ(server_->Saturation(), "all 1 workers busy and 0 requests waiting");
  Open();
  EXPECT_EQ(running.Read().status, 200);
  for (int i = 0; i < 500 && !server_->Saturation().empty(); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(server_->Saturation(), "");
}

TEST(HttpServer, APortInUseIsAClearError) {
  HttpServer first({});
  Result<int> port = first.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  HttpServerOptions o;
  o.what = "second listener";
  HttpServer second(std::move(o));
  Result<int> again = second.Start("127.0.0.1", *port);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message(), "second listener: cannot listen on 127.0.0.1:" +
                                          std::to_string(*port) + ": the port is in use");
}

class HttpServerTlsTest : public HttpServerTest {
 protected:
  void SetUp() override {
    const char* base = std::getenv("VGPU_TEST_TMP");
    dir_ = std::string(base != nullptr ? base : "/tmp") + "/http-tls-" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    const std::string cmd =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=t"
        " -keyout " +
        dir_ + "/key.pem -out " + dir_ + "/cert.pem >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  void TearDown() override {
    HttpServerTest::TearDown();
    std::filesystem::remove_all(dir_);
  }
  std::string dir_;
};

TEST_F(HttpServerTlsTest, ServesTlsAndClosesASilentHandshake) {
  Result<std::shared_ptr<ssl_ctx_st>> ctx =
      LoadTlsServerContext(dir_ + "/cert.pem", dir_ + "/key.pem");
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  HttpLimits l = ShortLimits();
  l.request_timeout = milliseconds(3000);  // handshakes of a loaded test machine
  StartServer(l, 2, *ctx);
  httplib::SSLClient c("127.0.0.1", port_);
  c.enable_server_certificate_verification(false);
  auto r = c.Post("/echo", "over tls", "text/plain");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->body, "over tls");
  r = c.Post("/echo", std::string(2000, 'x'), "text/plain");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 413);
  // A client that connects and never starts the handshake.
  RawClient raw(port_);
  ASSERT_TRUE(raw.connected());
  EXPECT_TRUE(raw.WaitClosed());
}

}  // namespace
}  // namespace vgpu::net
