#include "server/stream_set.h"

#include <algorithm>

namespace tempered {

void StreamSet::add(std::shared_ptr<GenerationStream> stream, int first_choice) {
    entries_.push_back({std::move(stream), first_choice, false});
}

bool StreamSet::all_done() const {
    return std::all_of(entries_.begin(), entries_.end(), [](const Entry& e) { return e.done; });
}

void StreamSet::cancel_all() {
    for (auto& entry : entries_)
        if (!entry.done) entry.stream->cancel();
}

std::optional<GenerationEvent> StreamSet::next(std::chrono::milliseconds timeout) {
    std::vector<size_t> open;
    for (size_t i = 0; i < entries_.size(); ++i)
        if (!entries_[(next_entry_ + i) % entries_.size()].done) open.push_back((next_entry_ + i) % entries_.size());
    if (open.empty()) return std::nullopt;
    // One stream: wait on it. Several: give each a share of the timeout, in turn, so none starves.
    const auto share = std::max(std::chrono::milliseconds(1), timeout / static_cast<int64_t>(open.size()));
    for (size_t index : open) {
        Entry& entry = entries_[index];
        auto event = entry.stream->next(open.size() == 1 ? timeout : share);
        if (!event) continue;
        next_entry_ = (index + 1) % entries_.size();
        for (auto& delta : event->deltas) delta.index += entry.first_choice;
        if (event->done) {
            entry.done = true;
            usage_.prompt_tokens += event->usage.prompt_tokens;
            usage_.cached_tokens += event->usage.cached_tokens;
            usage_.completion_tokens += event->usage.completion_tokens;
        }
        return event;
    }
    return std::nullopt;
}

}  // namespace tempered
