#include "disagg/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tempered {
namespace {

std::string system_error(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

int milliseconds_until(Deadline deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - TransferClock::now()).count();
    if (left <= 0) return 0;
    return left > 1000 * 60 * 60 ? 1000 * 60 * 60 : static_cast<int>(left);
}

// Waits for `events` on `fd`; false on timeout. POLLHUP/POLLERR count as ready: the read or write
// that follows reports them.
bool wait_for(int fd, short events, Deadline deadline) {
    while (true) {
        pollfd entry{fd, events, 0};
        int result = ::poll(&entry, 1, milliseconds_until(deadline));
        if (result > 0) return true;
        if (result == 0) return false;
        if (errno != EINTR) return true;
    }
}

SocketError timed_out() { return {SocketFailure::Timeout, "timed out"}; }
SocketError peer_closed() { return {SocketFailure::PeerClosed, "connection closed by the peer"}; }

Result<addrinfo*> resolve(const std::string& host, int port, bool passive) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (passive) hints.ai_flags = AI_PASSIVE;
    addrinfo* found = nullptr;
    int status = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (status != 0) return Error{"cannot resolve " + host + ": " + ::gai_strerror(status)};
    return found;
}

// How often a connect in progress looks at its cancel flag.
constexpr std::chrono::milliseconds kConnectSlice{20};

Result<Socket> connect_one(const addrinfo& address, Deadline deadline, const std::atomic<bool>* cancelled) {
    int fd = ::socket(address.ai_family, address.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, address.ai_protocol);
    if (fd < 0) return Error{system_error("socket")};
    Socket socket(fd);
    if (::connect(fd, address.ai_addr, address.ai_addrlen) != 0) {
        if (errno != EINPROGRESS) return Error{system_error("connect")};
        while (!wait_for(fd, POLLOUT, std::min(deadline, TransferClock::now() + kConnectSlice))) {
            if (cancelled != nullptr && cancelled->load()) return Error{"connect cancelled"};
            if (TransferClock::now() >= deadline) return Error{"connect timed out"};
        }
        int error = 0;
        socklen_t length = sizeof(error);
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
        if (error != 0) return Error{std::string("connect: ") + std::strerror(error)};
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return socket;
}

}  // namespace

Socket& Socket::operator=(Socket&& other) noexcept {
    if (this != &other) {
        close();
        fd_ = other.fd_.exchange(-1);
    }
    return *this;
}

void Socket::close() {
    int fd = fd_.exchange(-1);
    if (fd >= 0) ::close(fd);
}

void Socket::shutdown() {
    int fd = fd_.load();
    if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
}

Result<Socket> Socket::connect(const std::string& host, int port, Deadline deadline,
                               const std::atomic<bool>* cancelled) {
    auto found = resolve(host, port, false);
    if (!found.ok()) return found.error();
    Error last{"no address"};
    for (addrinfo* address = found.value(); address != nullptr; address = address->ai_next) {
        auto socket = connect_one(*address, deadline, cancelled);
        if (socket.ok()) {
            ::freeaddrinfo(found.value());
            return socket;
        }
        last = socket.error();
    }
    ::freeaddrinfo(found.value());
    return last;
}

Result<Socket> Socket::listen(const std::string& host, int port) {
    auto found = resolve(host, port, true);
    if (!found.ok()) return found.error();
    addrinfo* address = found.value();
    int fd = ::socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, address->ai_protocol);
    if (fd < 0) {
        ::freeaddrinfo(address);
        return Error{system_error("socket")};
    }
    Socket socket(fd);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    bool bound = ::bind(fd, address->ai_addr, address->ai_addrlen) == 0 && ::listen(fd, 64) == 0;
    ::freeaddrinfo(address);
    if (!bound) return Error{system_error(("cannot listen on " + host + ":" + std::to_string(port)).c_str())};
    return socket;
}

int Socket::bound_port() const {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    if (::getsockname(fd_.load(), reinterpret_cast<sockaddr*>(&address), &length) != 0) return -1;
    if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
    return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
}

Socket Socket::accept(std::chrono::milliseconds timeout) {
    int fd = fd_.load();
    if (fd < 0 || !wait_for(fd, POLLIN, TransferClock::now() + timeout)) return Socket();
    int accepted = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (accepted < 0) return Socket();
    int one = 1;
    ::setsockopt(accepted, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return Socket(accepted);
}

SocketStatus Socket::send_all(std::span<const uint8_t> bytes, Deadline deadline) {
    int fd = fd_.load();
    size_t sent = 0;
    while (sent < bytes.size()) {
        ssize_t result = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (result > 0) {
            sent += static_cast<size_t>(result);
            continue;
        }
        if (result < 0 && errno == EINTR) continue;
        if (result < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!wait_for(fd, POLLOUT, deadline)) return timed_out();
            continue;
        }
        if (result < 0 && (errno == EPIPE || errno == ECONNRESET)) return peer_closed();
        return SocketError{SocketFailure::Failed, system_error("send")};
    }
    return Ok{};
}

SocketStatus Socket::receive_exact(std::span<uint8_t> bytes, Deadline deadline) {
    int fd = fd_.load();
    size_t received = 0;
    while (received < bytes.size()) {
        ssize_t result = ::recv(fd, bytes.data() + received, bytes.size() - received, 0);
        if (result > 0) {
            received += static_cast<size_t>(result);
            continue;
        }
        if (result == 0) return peer_closed();
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (!wait_for(fd, POLLIN, deadline)) return timed_out();
            continue;
        }
        if (errno == ECONNRESET) return peer_closed();
        return SocketError{SocketFailure::Failed, system_error("recv")};
    }
    return Ok{};
}

bool Socket::peer_is_loopback() const {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    if (::getpeername(fd_.load(), reinterpret_cast<sockaddr*>(&address), &length) != 0) return false;
    if (address.ss_family == AF_INET) {
        uint32_t ip = ntohl(reinterpret_cast<sockaddr_in*>(&address)->sin_addr.s_addr);
        return (ip >> 24) == 127;
    }
    const in6_addr& ip6 = reinterpret_cast<sockaddr_in6*>(&address)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&ip6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&ip6) && ip6.s6_addr[12] == 127;
}

}  // namespace tempered
