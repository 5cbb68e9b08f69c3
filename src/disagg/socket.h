// A TCP socket for the KV transfer: every blocking call has a deadline, and shutdown() from another
// thread wakes whoever waits on it (cancel, server stop). SIGPIPE never fires: a peer gone is an error.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "core/result.h"

namespace tempered {

using TransferClock = std::chrono::steady_clock;
using Deadline = TransferClock::time_point;

enum class SocketFailure { Timeout, PeerClosed, Failed };
struct SocketError {
    SocketFailure kind = SocketFailure::Failed;
    std::string message;  // "timed out", "connection closed by the peer", or the system's reason
};
using SocketStatus = Result<Ok, SocketError>;

class Socket {
public:
    Socket() = default;
    explicit Socket(int fd) : fd_(fd) {}
    Socket(Socket&& other) noexcept : fd_(other.fd_.exchange(-1)) {}
    Socket& operator=(Socket&& other) noexcept;
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;
    ~Socket() { close(); }

    // Resolves `host` and connects within `deadline`; gives up early once `*cancelled` is set.
    static Result<Socket> connect(const std::string& host, int port, Deadline deadline,
                                  const std::atomic<bool>* cancelled = nullptr);
    // Listens on host:port (port 0: the kernel picks one; bound_port() tells which).
    static Result<Socket> listen(const std::string& host, int port);
    int bound_port() const;
    // Waits up to `timeout` for a connection; an invalid Socket when none came or the socket was shut down.
    Socket accept(std::chrono::milliseconds timeout);

    SocketStatus send_all(std::span<const uint8_t> bytes, Deadline deadline);
    SocketStatus receive_exact(std::span<uint8_t> bytes, Deadline deadline);
    // Wakes every thread blocked on this socket; safe from any thread while another uses it.
    void shutdown();
    bool valid() const { return fd_.load() >= 0; }
    // The peer is on this machine (127.0.0.0/8, ::1 or its v4-mapped form).
    bool peer_is_loopback() const;

private:
    void close();
    std::atomic<int> fd_{-1};
};

}  // namespace tempered
