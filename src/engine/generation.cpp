#include "engine/generation.h"

#include "engine/engine_observer.h"

namespace tempered {

const char* finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::Stop: return "stop";
        case FinishReason::Length: return "length";
        case FinishReason::Repetition: return "repetition";
    }
    return "stop";
}

const char* request_outcome_name(RequestOutcome outcome) {
    switch (outcome) {
        case RequestOutcome::Stop: return "stop";
        case RequestOutcome::Length: return "length";
        case RequestOutcome::Abort: return "abort";
        case RequestOutcome::Error: return "error";
        case RequestOutcome::Repetition: return "repetition";
    }
    return "error";
}

RequestOutcome finished_outcome(std::optional<FinishReason> first_choice) {
    if (first_choice == FinishReason::Length) return RequestOutcome::Length;
    if (first_choice == FinishReason::Repetition) return RequestOutcome::Repetition;
    return RequestOutcome::Stop;
}

std::optional<GenerationEvent> GenerationStream::next(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
    GenerationEvent event = std::move(events_.front());
    events_.pop_front();
    return event;
}

void GenerationStream::cancel() {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
}

bool GenerationStream::cancelled() const {
    std::lock_guard lock(mutex_);
    return cancelled_;
}

void GenerationStream::push(GenerationEvent event) {
    {
        std::lock_guard lock(mutex_);
        if (overflowed_) return;
        if (events_.size() >= max_undelivered_ && !event.done) {
            overflowed_ = true;
            cancelled_ = true;
            event = GenerationEvent{};
            event.done = true;
            event.error = "the client did not read its stream: " + std::to_string(events_.size()) +
                          " events undelivered, the request was cancelled";
        }
        events_.push_back(std::move(event));
    }
    ready_.notify_one();
}

}  // namespace tempered
