// The HTTP server against clients that are slow, idle, too many or do not read: each is cut at its
// deadline and the others are served. Raw sockets on 127.0.0.1, short timeouts so the tests stay quick.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "http/http_server.h"
#include "http/httplib_include.h"

namespace tempered::http {
namespace {
namespace http_slow_clients_test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// One client connection driven by hand: send bytes when we like, read what the server says, notice when
// it closes.
class RawClient {
public:
    explicit RawClient(int port, int receive_buffer = 0) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        if (receive_buffer > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(static_cast<uint16_t>(port));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    }
    ~RawClient() { close(); }
    RawClient(const RawClient&) = delete;
    RawClient& operator=(const RawClient&) = delete;

    bool connected() const { return connected_; }
    void send(const std::string& bytes) { static_cast<void>(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL)); }
    void close() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

    // Reads what has arrived within `wait`; true once the server has closed the connection.
    bool poll_closed(std::chrono::milliseconds wait = 0ms) {
        if (closed_) return true;
        pollfd entry{fd_, POLLIN, 0};
        if (::poll(&entry, 1, static_cast<int>(wait.count())) <= 0) return false;
        char buffer[4096];
        const ssize_t size = ::recv(fd_, buffer, sizeof(buffer), MSG_DONTWAIT);
        if (size > 0) received_.append(buffer, static_cast<size_t>(size));
        if (size == 0 || (size < 0 && errno == ECONNRESET)) closed_ = true;
        return closed_;
    }
    // Waits up to `timeout` for the server to close; true if it did.
    bool wait_closed(std::chrono::milliseconds timeout) {
        const auto until = Clock::now() + timeout;
        while (Clock::now() < until)
            if (poll_closed(10ms)) return true;
        return false;
    }
    // Waits up to `timeout` for `marker` in what the server sent.
    bool wait_for_text(const std::string& marker, std::chrono::milliseconds timeout) {
        const auto until = Clock::now() + timeout;
        while (received_.find(marker) == std::string::npos && Clock::now() < until && !poll_closed(10ms)) {}
        return received_.find(marker) != std::string::npos;
    }
    const std::string& received() const { return received_; }

private:
    int fd_ = -1;
    bool connected_ = false;
    bool closed_ = false;
    std::string received_;
};

HttpServerOptions quick_options() {
    HttpServerOptions options;
    options.threads = 8;
    options.header_timeout = 500ms;
    options.body_timeout = 1500ms;
    return options;
}

void add_echo_route(HttpServer& server) {
    server.route("GET", "/ok", [](const HttpRequest&) { return HttpResponse::text(200, "fine"); });
    server.route("POST", "/echo", [](const HttpRequest& request) { return HttpResponse::text(200, request.body); });
}

// Sends `bytes` one at a time every `interval` until the server closes or `limit` passes; the seconds it took.
double trickle_until_closed(RawClient& client, const std::string& bytes, std::chrono::milliseconds interval,
                            std::chrono::milliseconds limit) {
    const auto start = Clock::now();
    size_t next = 0;
    while (Clock::now() - start < limit) {
        if (client.poll_closed(interval)) return seconds_since(start);
        client.send(std::string(1, bytes[next++ % bytes.size()]));
    }
    return -1;
}

TEST(HttpSlowClients, HeadersTrickledPastTheHeaderTimeoutGet408AndClose) {
    // Both places httplib can be when the deadline passes: inside the request line, and inside the headers.
    for (const std::string opening : {"GET /ok HT", "GET /ok HTTP/1.1\r\nX-Slow: a"}) {
        HttpServer server(quick_options());
        add_echo_route(server);
        ASSERT_TRUE(server.start().ok());
        RawClient client(server.port());
        ASSERT_TRUE(client.connected());
        client.send(opening);
        const double took = trickle_until_closed(client, "abcdef", 50ms, 5000ms);
        EXPECT_GE(took, 0.4) << opening;
        EXPECT_LT(took, 2.0) << opening;  // the per-read timeout (30 s) would never have cut it
        EXPECT_NE(client.received().find("HTTP/1.1 408"), std::string::npos) << client.received();
        EXPECT_NE(client.received().find("--header-timeout"), std::string::npos) << client.received();
    }
}

TEST(HttpSlowClients, AConnectionThatSendsNothingIsClosedSilentlyAtTheHeaderTimeout) {
    HttpServer server(quick_options());
    add_echo_route(server);
    ASSERT_TRUE(server.start().ok());
    RawClient client(server.port());
    const auto start = Clock::now();
    ASSERT_TRUE(client.wait_closed(5000ms));
    EXPECT_GE(seconds_since(start), 0.4);
    EXPECT_LT(seconds_since(start), 2.0);
    EXPECT_EQ(client.received(), "");  // no 408 for a connection that never began a request
}

TEST(HttpSlowClients, TheBodyHasItsOwnDeadline) {
    HttpServer server(quick_options());
    add_echo_route(server);
    ASSERT_TRUE(server.start().ok());
    const std::string headers = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n";
    {  // headers at once, the body later than the header timeout but within the body timeout: served
        RawClient client(server.port());
        client.send(headers);
        std::this_thread::sleep_for(800ms);
        client.send("0123456789");
        EXPECT_TRUE(client.wait_for_text("0123456789", 3000ms)) << client.received();
        EXPECT_NE(client.received().find("HTTP/1.1 200"), std::string::npos) << client.received();
    }
    {  // a body trickled past the body timeout: 408 at about that deadline
        RawClient client(server.port());
        client.send(headers);
        const double took = trickle_until_closed(client, "x", 200ms, 6000ms);
        EXPECT_GE(took, 1.3);
        EXPECT_LT(took, 3.5);
        EXPECT_NE(client.received().find("HTTP/1.1 408"), std::string::npos) << client.received();
        EXPECT_NE(client.received().find("--body-timeout"), std::string::npos) << client.received();
    }
}

TEST(HttpSlowClients, AnIdleKeepAliveConnectionIsClosedAfterTheKeepAliveTimeout) {
    HttpServerOptions options = quick_options();
    options.keep_alive_timeout = 1s;
    HttpServer server(options);
    add_echo_route(server);
    ASSERT_TRUE(server.start().ok());
    RawClient client(server.port());
    client.send("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_TRUE(client.wait_for_text("fine", 3000ms));
    const auto idle_since = Clock::now();
    ASSERT_TRUE(client.wait_closed(5000ms));
    EXPECT_GE(seconds_since(idle_since), 0.9);  // the keep-alive timeout, not the 0.5 s header timeout
    EXPECT_LT(seconds_since(idle_since), 2.5);
}

TEST(HttpSlowClients, ConnectionsPastThePerClientLimitGet429AndClose) {
    HttpServerOptions options = quick_options();
    options.header_timeout = 10s;  // the two held connections stay open for the whole test
    options.max_connections_per_client = 2;
    HttpServer server(options);
    add_echo_route(server);
    ASSERT_TRUE(server.start().ok());
    auto first = std::make_unique<RawClient>(server.port());
    RawClient second(server.port());
    while (server.open_connections() < 2) std::this_thread::sleep_for(5ms);

    RawClient third(server.port());
    third.send("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_TRUE(third.wait_closed(3000ms));
    EXPECT_NE(third.received().find("HTTP/1.1 429"), std::string::npos) << third.received();
    EXPECT_NE(third.received().find("--max-connections-per-client"), std::string::npos) << third.received();

    first.reset();  // one closes: a new connection is served
    const auto until = Clock::now() + 3s;
    while (server.open_connections() > 1 && Clock::now() < until) std::this_thread::sleep_for(5ms);
    RawClient fourth(server.port());
    fourth.send("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_TRUE(fourth.wait_for_text("fine", 3000ms)) << fourth.received();
}

TEST(HttpSlowClients, AQueuedClientWaitsNoLongerThanTheHeaderTimeoutWhenSlowClientsHoldEveryThread) {
    HttpServerOptions options = quick_options();
    options.threads = 4;
    options.header_timeout = 1s;
    HttpServer server(options);
    add_echo_route(server);
    ASSERT_TRUE(server.start().ok());
    std::vector<std::unique_ptr<RawClient>> slow;
    for (int i = 0; i < 8; ++i) slow.push_back(std::make_unique<RawClient>(server.port()));
    for (auto& client : slow) client->send("GET /ok HTTP/1.1\r\nX-Slow: ");
    const auto start = Clock::now();
    auto normal = std::async(std::launch::async, [port = server.port()] {
        httplib::Client client("127.0.0.1", port);
        client.set_read_timeout(10, 0);
        auto got = client.Get("/ok");
        return got && got->status == 200 && got->body == "fine";
    });
    // The slow clients keep trickling; the server must cut them to serve the normal one.
    while (normal.wait_for(100ms) != std::future_status::ready && seconds_since(start) < 10) {
        for (auto& client : slow)
            if (!client->poll_closed()) client->send("a");
    }
    const double took = seconds_since(start);
    EXPECT_TRUE(normal.get());
    EXPECT_LT(took, 2.5);  // one header timeout (the slow clients ahead of it), plus slack
    for (auto& client : slow) EXPECT_TRUE(client->wait_closed(3000ms));
}

TEST(HttpSlowClients, AWriteToAClientThatReadsNothingFailsAfterTheStallTimeout) {
    HttpServerOptions options = quick_options();
    options.write_timeout = 500ms;
    HttpServer server(options);
    std::promise<double> stalled_for;  // seconds between the last write that got through and the failure
    server.route("GET", "/flood", [&](const HttpRequest&) {
        return HttpResponse::streaming("text/event-stream", [&](StreamWriter& writer) {
            const std::string chunk(4096, 'x');
            auto last_progress = Clock::now();
            for (int i = 0; i < 100000; ++i) {
                if (!writer.write(chunk)) {
                    stalled_for.set_value(seconds_since(last_progress));
                    return;
                }
                last_progress = Clock::now();
            }
            stalled_for.set_value(-1);  // everything was taken: the client did read
        });
    });
    ASSERT_TRUE(server.start().ok());
    RawClient client(server.port(), /*receive_buffer=*/4096);
    client.send("GET /flood HTTP/1.1\r\nHost: x\r\n\r\n");
    auto result = stalled_for.get_future();
    ASSERT_EQ(result.wait_for(10s), std::future_status::ready);
    const double stalled = result.get();
    EXPECT_GE(stalled, 0.45);
    EXPECT_LT(stalled, 3.0);
}

TEST(HttpSlowClients, AStreamWhoseClientTakesNothingFailsLongBeforeTheSendBufferFills) {
    // Small chunks at a token-like pace: the kernel would queue megabytes of them before send() blocks, so
    // it is what the client acknowledges that tells it has stopped reading.
    HttpServerOptions options = quick_options();
    options.write_timeout = 500ms;
    HttpServer server(options);
    std::promise<double> failed_after;  // seconds from the first chunk to the failed write
    server.route("GET", "/tokens", [&](const HttpRequest&) {
        return HttpResponse::streaming("text/event-stream", [&](StreamWriter& writer) {
            const std::string chunk = "data: " + std::string(200, 't') + "\n\n";
            const auto start = Clock::now();
            while (seconds_since(start) < 20) {
                if (!writer.write(chunk)) return failed_after.set_value(seconds_since(start));
                std::this_thread::sleep_for(5ms);
            }
            failed_after.set_value(-1);
        });
    });
    ASSERT_TRUE(server.start().ok());
    RawClient client(server.port(), /*receive_buffer=*/4096);
    client.send("GET /tokens HTTP/1.1\r\nHost: x\r\n\r\n");
    auto result = failed_after.get_future();
    ASSERT_EQ(result.wait_for(15s), std::future_status::ready);
    const double failed = result.get();
    EXPECT_GE(failed, 0.45);
    EXPECT_LT(failed, 4.0);  // ~200 KB/s for 20 s would fit in a send buffer of 4 MB
}

}  // namespace http_slow_clients_test
}  // namespace
}  // namespace tempered::http
