#include "grammar/context_key.h"

#include <deque>
#include <unordered_map>

namespace tempered::grammar {
namespace {

class KeyWriter {
public:
    KeyWriter(const Grammar& grammar, size_t max_bytes) : grammar_(grammar), max_bytes_(max_bytes) {}

    // The elements from `position` through the kEnd of its alternative.
    bool write_run(uint32_t position) {
        for (;; ++position) {
            const Element& element = grammar_.elements[position];
            switch (element.kind) {
                case Element::Kind::kBytes:
                    out_ += 'B';
                    for (uint64_t word : grammar_.byte_sets[element.index].bits) append_number(word);
                    break;
                case Element::Kind::kRule:
                    out_ += 'R';
                    append_number(local_id(element.index));
                    break;
                case Element::Kind::kEnd: out_ += 'E'; return out_.size() <= max_bytes_;
            }
            if (out_.size() > max_bytes_) return false;
        }
    }

    // Every rule met so far and those they reach, each with all its alternatives.
    bool write_rules() {
        while (!pending_.empty()) {
            const RuleId rule = pending_.front();
            pending_.pop_front();
            out_ += 'L';
            append_number(grammar_.rule_alternatives[rule].size());
            for (uint32_t start : grammar_.rule_alternatives[rule])
                if (!write_run(start)) return false;
        }
        return true;
    }

    void begin_frame() { out_ += 'F'; }
    std::string take() { return std::move(out_); }

private:
    uint64_t local_id(RuleId rule) {
        auto [it, added] = ids_.try_emplace(rule, ids_.size());
        if (added) pending_.push_back(rule);
        return it->second;
    }

    void append_number(uint64_t value) { out_.append(reinterpret_cast<const char*>(&value), sizeof value); }

    const Grammar& grammar_;
    const size_t max_bytes_;
    std::string out_;
    std::unordered_map<RuleId, uint64_t> ids_;
    std::deque<RuleId> pending_;
};

}  // namespace

std::optional<std::string> context_key(const Grammar& grammar, std::span<const uint32_t> context, size_t max_bytes) {
    KeyWriter writer(grammar, max_bytes);
    for (uint32_t position : context) {
        writer.begin_frame();
        if (!writer.write_run(position)) return std::nullopt;
    }
    if (!writer.write_rules()) return std::nullopt;
    return writer.take();
}

}  // namespace tempered::grammar
