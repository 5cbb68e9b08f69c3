// RequestedValue<T>: a request field together with how the client gave it. An omitted field and an
// explicit JSON null both mean "use the default" (OpenAI's semantics), but the server reports where
// each sampling value came from, so the difference is kept.
#pragma once

#include <optional>
#include <utility>

namespace tempered::api {

enum class Presence {
    Omitted,  // the key was not in the request
    Null,     // "key": null
    Given,    // "key": <value>
};

template <class T>
struct RequestedValue {
    Presence presence = Presence::Omitted;
    std::optional<T> value;  // set exactly when presence == Given

    bool given() const { return presence == Presence::Given; }
    // The client's value, or `fallback` when it was omitted or null.
    T value_or(T fallback) const { return value ? *value : std::move(fallback); }

    static RequestedValue of(T v) { return {Presence::Given, std::move(v)}; }
    static RequestedValue null() { return {Presence::Null, std::nullopt}; }
};

}  // namespace tempered::api
