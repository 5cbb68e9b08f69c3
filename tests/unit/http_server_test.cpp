// HttpServer against a real socket on 127.0.0.1 (ephemeral port) with cpp-httplib's client.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "http/http_server.h"
#include "http/httplib_include.h"

namespace tempered::http {
namespace {
namespace http_server_test {

using namespace std::chrono_literals;

// Waits for a predicate with a deadline, so that a broken stream fails a test instead of hanging it.
class Signal {
public:
    void notify(int value) {
        {
            std::lock_guard lock(mutex_);
            value_ = value;
        }
        changed_.notify_all();
    }
    bool wait_for_at_least(int value, std::chrono::milliseconds timeout = 5000ms) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, timeout, [&] { return value_ >= value; });
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    int value_ = 0;
};

HttpServerOptions small_options() {
    HttpServerOptions options;
    options.threads = 16;
    options.max_body_bytes = 1024;
    return options;
}

TEST(HttpServer, RoutesWithPathParamsQueryHeadersAndBody) {
    HttpServer server(small_options());
    server.route("GET", "/v1/models/{model}", [](const HttpRequest& request) {
        nlohmann::json out = {{"model", request.path_params.at("model")},
                              {"q", request.query.count("q") ? request.query.find("q")->second : ""},
                              {"auth", request.header("authorization")}};
        return HttpResponse::json(200, out.dump());
    });
    server.route("POST", "/echo", [](const HttpRequest& request) {
        HttpResponse response = HttpResponse::text(201, request.body);
        response.headers.emplace("X-Method", request.method);
        return response;
    });
    ASSERT_TRUE(server.start().ok());
    ASSERT_GT(server.port(), 0);

    httplib::Client client("127.0.0.1", server.port());
    auto got = client.Get("/v1/models/llama-3?q=1", {{"Authorization", "Bearer x"}});
    ASSERT_TRUE(got);
    EXPECT_EQ(got->status, 200);
    EXPECT_EQ(got->get_header_value("Content-Type"), "application/json");
    const auto json = nlohmann::json::parse(got->body);
    EXPECT_EQ(json["model"], "llama-3");
    EXPECT_EQ(json["q"], "1");
    EXPECT_EQ(json["auth"], "Bearer x");

    auto posted = client.Post("/echo", "hello", "text/plain");
    ASSERT_TRUE(posted);
    EXPECT_EQ(posted->status, 201);
    EXPECT_EQ(posted->body, "hello");
    EXPECT_EQ(posted->get_header_value("X-Method"), "POST");
}

TEST(HttpServer, UnknownPathIs404AndWrongMethodIs405InOpenAiShape) {
    HttpServer server(small_options());
    server.route("POST", "/v1/chat/completions", [](const HttpRequest&) { return HttpResponse::json(200, "{}"); });
    ASSERT_TRUE(server.start().ok());
    httplib::Client client("127.0.0.1", server.port());

    auto missing = client.Post("/v1/nope", "{}", "application/json");
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 404);
    const auto error = nlohmann::json::parse(missing->body)["error"];
    EXPECT_EQ(error["type"], "invalid_request_error");
    EXPECT_NE(error["message"].get<std::string>().find("/v1/nope"), std::string::npos);
    EXPECT_TRUE(error["param"].is_null());
    EXPECT_TRUE(error["code"].is_null());

    auto wrong_method = client.Get("/v1/chat/completions");
    ASSERT_TRUE(wrong_method);
    EXPECT_EQ(wrong_method->status, 405);
    EXPECT_EQ(wrong_method->get_header_value("Allow"), "POST");
}

TEST(HttpServer, HandlerExceptionBecomes500) {
    HttpServer server(small_options());
    server.route("GET", "/boom", [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("kaput"); });
    ASSERT_TRUE(server.start().ok());
    httplib::Client client("127.0.0.1", server.port());
    auto got = client.Get("/boom");
    ASSERT_TRUE(got);
    EXPECT_EQ(got->status, 500);
    EXPECT_EQ(nlohmann::json::parse(got->body)["error"]["type"], "server_error");
}

TEST(HttpServer, CustomErrorRenderer) {
    HttpServer server(small_options());
    server.set_error_renderer([](int status, std::string_view message, const http::HttpRequest& /*request*/) {
        return HttpResponse::text(status, "custom: " + std::string(message));
    });
    ASSERT_TRUE(server.start().ok());
    httplib::Client client("127.0.0.1", server.port());
    auto got = client.Get("/x");
    ASSERT_TRUE(got);
    EXPECT_EQ(got->status, 404);
    EXPECT_EQ(got->body, "custom: Invalid URL (GET /x)");
}

TEST(HttpServer, OversizedBodyIs413AndTheConnectionStaysUsable) {
    HttpServer server(small_options());  // max_body_bytes = 1024
    std::set<int> ports;
    std::mutex mutex;
    server.route("POST", "/v1/completions", [&](const HttpRequest& request) {
        std::lock_guard lock(mutex);
        ports.insert(request.remote_port);
        return HttpResponse::json(200, std::to_string(request.body.size()));
    });
    ASSERT_TRUE(server.start().ok());
    httplib::Client client("127.0.0.1", server.port());
    client.set_keep_alive(true);

    const std::string big(4096, 'x');
    auto declared = client.Post("/v1/completions", big, "application/json");  // Content-Length
    ASSERT_TRUE(declared);
    EXPECT_EQ(declared->status, 413);
    const auto error = nlohmann::json::parse(declared->body)["error"];
    EXPECT_EQ(error["type"], "invalid_request_error");
    EXPECT_NE(error["message"].get<std::string>().find("1024"), std::string::npos);

    auto chunked = client.Post(
        "/v1/completions",
        [&](size_t offset, httplib::DataSink& sink) {
            if (offset < big.size()) {
                sink.write(big.data() + offset, 512);
            } else {
                sink.done();
            }
            return true;
        },
        "application/json");
    ASSERT_TRUE(chunked);
    EXPECT_EQ(chunked->status, 413);

    auto fits = client.Post("/v1/completions", std::string(1024, 'y'), "application/json");
    ASSERT_TRUE(fits);
    EXPECT_EQ(fits->status, 200);
    EXPECT_EQ(fits->body, "1024");
}

// A raw client: sends `request` as is and returns what arrives until `marker` has, `count` times.
std::string raw_exchange(int port, const std::string& request, const std::string& marker, int count) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_GE(fd, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
    std::string received;
    char buffer[512];
    auto occurrences = [&] {
        int found = 0;
        for (size_t at = received.find(marker); at != std::string::npos; at = received.find(marker, at + 1)) ++found;
        return found;
    };
    while (occurrences() < count) {
        const ssize_t size = ::recv(fd, buffer, sizeof(buffer), 0);
        if (size <= 0) break;
        received.append(buffer, static_cast<size_t>(size));
    }
    ::close(fd);
    return received;
}

TEST(HttpServer, PostWithoutContentLengthHasAnEmptyBody) {
    HttpServer server(small_options());
    server.route("POST", "/flush_cache", [](const HttpRequest& request) {
        return HttpResponse::text(200, "body bytes " + std::to_string(request.body.size()) + ";");
    });
    ASSERT_TRUE(server.start().ok());
    // Two on one connection: the first must not leave the connection out of step for the second.
    const std::string request = "POST /flush_cache HTTP/1.1\r\nHost: x\r\n\r\n";
    const std::string received = raw_exchange(server.port(), request + request, "body bytes 0;", 2);
    EXPECT_EQ(received.find("HTTP/1.1 200"), 0u) << received;
    EXPECT_NE(received.rfind("HTTP/1.1 200"), 0u) << received;
    EXPECT_NE(received.find("body bytes 0;"), received.rfind("body bytes 0;")) << received;
}

TEST(HttpServer, StreamedChunksArriveOneByOne) {
    HttpServer server(small_options());
    Signal received;  // how many chunks the client has seen
    std::atomic<bool> lockstep_held{true};
    server.route("GET", "/stream", [&](const HttpRequest&) {
        return HttpResponse::streaming("text/event-stream", [&](StreamWriter& writer) {
            for (int i = 1; i <= 5; ++i) {
                ASSERT_TRUE(writer.write("data: " + std::to_string(i) + "\n\n"));
                // The next chunk is written only once the client has this one: if anything buffered
                // the stream, this wait would time out.
                if (!received.wait_for_at_least(i)) lockstep_held = false;
            }
        });
    });
    ASSERT_TRUE(server.start().ok());
    httplib::Client client("127.0.0.1", server.port());
    client.set_default_headers({{"Accept-Encoding", "gzip, deflate, br"}});  // like the OpenAI SDK
    std::vector<std::string> chunks;
    auto got = client.Get("/stream", [&](const char* data, size_t size) {
        chunks.emplace_back(data, size);
        received.notify(static_cast<int>(chunks.size()));
        return true;
    });
    ASSERT_TRUE(got);
    EXPECT_EQ(got->status, 200);
    EXPECT_EQ(got->get_header_value("Content-Type"), "text/event-stream");
    EXPECT_TRUE(lockstep_held);
    ASSERT_EQ(chunks.size(), 5u);
    EXPECT_EQ(chunks[0], "data: 1\n\n");
    EXPECT_EQ(chunks[4], "data: 5\n\n");
}

TEST(HttpServer, ProducerSeesClientDisconnectThroughWrite) {
    HttpServer server(small_options());
    Signal write_failed;
    std::atomic<int> writes{0};
    std::atomic<bool> finished_callback_completed{true};
    Signal finished;
    server.route("GET", "/stream", [&](const HttpRequest&) {
        return HttpResponse::streaming(
            "text/event-stream",
            [&](StreamWriter& writer) {
                const auto deadline = std::chrono::steady_clock::now() + 5s;
                while (std::chrono::steady_clock::now() < deadline) {
                    if (!writer.write("data: tick\n\n")) {
                        write_failed.notify(1);
                        return;
                    }
                    ++writes;
                    std::this_thread::sleep_for(2ms);
                }
            },
            [&](bool completed) {
                finished_callback_completed = completed;
                finished.notify(1);
            });
    });
    ASSERT_TRUE(server.start().ok());
    {
        httplib::Client client("127.0.0.1", server.port());
        int seen = 0;
        auto got = client.Get("/stream", [&](const char*, size_t) { return ++seen < 3; });  // cancel
        EXPECT_FALSE(got);
    }  // the client closes its socket
    EXPECT_TRUE(write_failed.wait_for_at_least(1));
    EXPECT_TRUE(finished.wait_for_at_least(1));
    EXPECT_FALSE(finished_callback_completed);
}

// A raw client: sends a request, reads until `marker` has arrived, then closes.
void request_then_close(int port, const std::string& path, const std::string& marker) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
    std::string received;
    char buffer[512];
    while (received.find(marker) == std::string::npos) {
        const ssize_t size = ::recv(fd, buffer, sizeof(buffer), 0);
        ASSERT_GT(size, 0);
        received.append(buffer, static_cast<size_t>(size));
    }
    ::close(fd);
}

TEST(HttpServer, ProducerSeesClientDisconnectWhileWaiting) {
    HttpServer server(small_options());
    Signal gone;
    std::atomic<bool> alive_at_start{false};
    server.route("GET", "/wait", [&](const HttpRequest&) {
        return HttpResponse::streaming("text/event-stream", [&](StreamWriter& writer) {
            alive_at_start = writer.is_connection_alive();
            writer.write(": queued\n\n");
            const auto deadline = std::chrono::steady_clock::now() + 5s;
            while (std::chrono::steady_clock::now() < deadline) {  // a long wait, polling
                if (!writer.is_connection_alive()) {
                    gone.notify(1);
                    EXPECT_FALSE(writer.write("data: late\n\n"));
                    return;
                }
                std::this_thread::sleep_for(5ms);
            }
        });
    });
    ASSERT_TRUE(server.start().ok());
    request_then_close(server.port(), "/wait", ": queued");
    EXPECT_TRUE(gone.wait_for_at_least(1));
    EXPECT_TRUE(alive_at_start);
}

TEST(HttpServer, BlockingHandlerSeesClientDisconnect) {
    HttpServer server(small_options());
    Signal gone;
    Signal polling;
    server.route("GET", "/slow", [&](const HttpRequest& request) {
        const bool alive_at_start = request.is_connection_alive();
        polling.notify(1);
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        while (std::chrono::steady_clock::now() < deadline && request.is_connection_alive()) {
            std::this_thread::sleep_for(5ms);
        }
        if (alive_at_start && !request.is_connection_alive()) gone.notify(1);
        return HttpResponse::json(200, "{}");
    });
    ASSERT_TRUE(server.start().ok());
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(server.port()));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    const std::string request = "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
    ASSERT_TRUE(polling.wait_for_at_least(1));
    ::close(fd);
    EXPECT_TRUE(gone.wait_for_at_least(1));
}

TEST(HttpServer, KeepAliveIsReusedAcrossStreamedAndPlainResponses) {
    HttpServer server(small_options());
    std::mutex mutex;
    std::set<int> client_ports;
    auto remember = [&](const HttpRequest& request) {
        std::lock_guard lock(mutex);
        client_ports.insert(request.remote_port);
    };
    server.route("GET", "/plain", [&](const HttpRequest& request) {
        remember(request);
        return HttpResponse::json(200, "{\"ok\":true}");
    });
    server.route("POST", "/stream", [&](const HttpRequest& request) {
        remember(request);
        return HttpResponse::streaming("text/event-stream", [](StreamWriter& writer) {
            writer.write("data: a\n\n");
            writer.write("data: [DONE]\n\n");
        });
    });
    ASSERT_TRUE(server.start().ok());
    httplib::Client client("127.0.0.1", server.port());
    client.set_keep_alive(true);
    client.set_tcp_nodelay(true);
    for (int i = 0; i < 50; ++i) {
        if (i % 2 == 0) {
            auto got = client.Post("/stream", "{}", "application/json");
            ASSERT_TRUE(got) << i;
            EXPECT_EQ(got->body, "data: a\n\ndata: [DONE]\n\n");
            EXPECT_TRUE(got->has_header("Keep-Alive")) << i;
        } else {
            auto got = client.Get("/plain");
            ASSERT_TRUE(got) << i;
            EXPECT_EQ(got->status, 200);
        }
    }
    EXPECT_EQ(client_ports.size(), 1u) << "every request should reuse the first connection";
}

TEST(HttpServer, ServesManyConcurrentStreams) {
    HttpServerOptions options = small_options();
    options.threads = 64;
    constexpr int kClients = 48;  // far above httplib's default pool of max(8, cores - 1)
    HttpServer server(options);
    std::atomic<int> started{0};
    Signal all_started;
    server.route("GET", "/hold", [&](const HttpRequest&) {
        return HttpResponse::streaming("text/event-stream", [&](StreamWriter& writer) {
            all_started.notify(++started);
            // Every stream stays open until all are open at once.
            writer.write(all_started.wait_for_at_least(kClients) ? "data: together\n\n" : "data: alone\n\n");
        });
    });
    ASSERT_TRUE(server.start().ok());
    std::vector<std::thread> clients;
    std::atomic<int> together{0};
    for (int i = 0; i < kClients; ++i) {
        clients.emplace_back([&] {
            httplib::Client client("127.0.0.1", server.port());
            auto got = client.Get("/hold");
            if (got && got->body == "data: together\n\n") ++together;
        });
    }
    for (auto& thread : clients) thread.join();
    EXPECT_EQ(together.load(), kClients);
}

TEST(HttpServer, StopLetsInFlightFinishAndDoesNotWaitForIdleConnections) {
    HttpServerOptions options = small_options();
    options.keep_alive_timeout = 60s;
    HttpServer server(options);
    Signal in_handler;
    server.route("GET", "/slow", [&](const HttpRequest&) {
        in_handler.notify(1);
        std::this_thread::sleep_for(300ms);
        return HttpResponse::json(200, "{\"done\":true}");
    });
    server.route("GET", "/fast", [](const HttpRequest&) { return HttpResponse::json(200, "{}"); });
    ASSERT_TRUE(server.start().ok());

    httplib::Client idle_client("127.0.0.1", server.port());  // leaves an idle keep-alive connection
    idle_client.set_keep_alive(true);
    ASSERT_TRUE(idle_client.Get("/fast"));

    httplib::Result slow_result{nullptr, httplib::Error::Unknown};
    std::thread slow([&] {
        httplib::Client client("127.0.0.1", server.port());
        slow_result = client.Get("/slow");
    });
    ASSERT_TRUE(in_handler.wait_for_at_least(1));
    const auto stop_began = std::chrono::steady_clock::now();
    server.stop();
    const auto stop_took = std::chrono::steady_clock::now() - stop_began;
    slow.join();
    ASSERT_TRUE(slow_result);
    EXPECT_EQ(slow_result->body, "{\"done\":true}");
    EXPECT_LT(stop_took, 5s);
    EXPECT_FALSE(server.is_running());
    EXPECT_EQ(server.open_connections(), 0u);

    httplib::Client late("127.0.0.1", server.port());
    late.set_connection_timeout(1s);
    EXPECT_FALSE(late.Get("/fast"));  // no longer accepting
}

TEST(HttpServer, PortInUseIsAnError) {
    HttpServer first(small_options());
    ASSERT_TRUE(first.start().ok());
    HttpServerOptions options = small_options();
    options.port = first.port();
    HttpServer second(options);
    EXPECT_FALSE(second.start().ok());
}

}  // namespace http_server_test
}  // namespace
}  // namespace tempered::http
