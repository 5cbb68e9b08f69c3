// Result<T>: the value of an operation that can fail on input we do not control (files, flags, requests).
// Library code returns it instead of throwing or exiting; the CLI and HTTP edges turn Error into a
// message and an exit code or an OpenAI-style error body.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace tempered {

struct Error {
    std::string message;
};

// `E` is the error type: Error here, api::ApiError (an HTTP status and OpenAI's fields) at the API.
template <class T, class E = Error>
class [[nodiscard]] Result {
public:
    Result(T value) : state_(std::move(value)) {}
    Result(E error) : state_(std::move(error)) {}

    bool ok() const { return state_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<0>(state_); }
    const T& value() const& { return std::get<0>(state_); }
    T&& value() && { return std::get<0>(std::move(state_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    const E& error() const { return std::get<1>(state_); }

private:
    std::variant<T, E> state_;
};

// Result<void>: success carries nothing.
struct Ok {};
using Status = Result<Ok>;

}  // namespace tempered
