// ReadDeadline: the time by which a connection must have delivered the part of a request it is reading
// (the request line and headers, then the body). A per-read timeout alone lets a client that sends a
// byte every few seconds hold its connection, and the thread serving it, for ever; a deadline on the
// whole phase bounds that. Each wait for bytes is the per-read timeout cut to the time left.
#pragma once

#include <chrono>

namespace tempered::http {

class ReadDeadline {
public:
    using Clock = std::chrono::steady_clock;
    enum class Phase { None, Header, Body };

    // From now on reads belong to `phase` and must be done by `deadline`.
    void start(Phase phase, Clock::time_point deadline) {
        phase_ = phase;
        deadline_ = deadline;
    }
    // Reading is over (the handler runs): waits are the per-read timeout alone.
    void clear() { phase_ = Phase::None; }

    Phase phase() const { return phase_; }
    bool passed(Clock::time_point now) const { return phase_ != Phase::None && now >= deadline_; }

    // How long the next wait for bytes may last: `read_timeout`, cut to the time left before the deadline;
    // zero once it has passed, so that a read takes only bytes that are already there.
    std::chrono::milliseconds next_wait(std::chrono::milliseconds read_timeout, Clock::time_point now) const {
        if (phase_ == Phase::None) return read_timeout;
        if (now >= deadline_) return std::chrono::milliseconds(0);
        // Rounded up: a wait that ends a little before the deadline would fail a read without a timeout.
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline_ - now);
        return left < read_timeout ? left : read_timeout;
    }

private:
    Phase phase_ = Phase::None;
    Clock::time_point deadline_{};
};

}  // namespace tempered::http
