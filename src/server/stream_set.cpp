#include "server/stream_set.h"

#include <algorithm>

namespace tempered {

void StreamSet::add(std::shared_ptr<GenerationStream> stream, int first_choice, int64_t prompt_tokens) {
    GenerationUsage usage;
    usage.prompt_tokens = prompt_tokens;
    entries_.push_back({std::move(stream), first_choice, false, usage});
}

GenerationUsage StreamSet::usage() const {
    GenerationUsage total;
    total.prompt_tokens = scored_prompt_tokens_;
    for (const auto& entry : entries_) {
        total.prompt_tokens += entry.usage.prompt_tokens;
        total.cached_tokens += entry.usage.cached_tokens;
        total.completion_tokens += entry.usage.completion_tokens;
    }
    return total;
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
        for (auto& delta : event->deltas) {
            delta.index += entry.first_choice;
            entry.usage.completion_tokens += static_cast<int64_t>(delta.tokens.size());
        }
        if (event->done) {
            entry.done = true;
            entry.usage = event->usage;
        }
        return event;
    }
    return std::nullopt;
}

}  // namespace tempered
