#include "sampling/dry.h"

#include <algorithm>
#include <cmath>

namespace tempered {

namespace {

void fill_window(std::span<const int32_t> prompt, std::span<const int32_t> output, int32_t penalty_last_n,
                 std::vector<int32_t>& window) {
    const size_t total = prompt.size() + output.size();
    const size_t size = penalty_last_n < 0 ? total : std::min(total, static_cast<size_t>(penalty_last_n));
    const size_t skip = total - size;
    window.clear();
    if (skip < prompt.size()) window.insert(window.end(), prompt.begin() + static_cast<ptrdiff_t>(skip), prompt.end());
    const size_t output_skip = skip > prompt.size() ? skip - prompt.size() : 0;
    window.insert(window.end(), output.begin() + static_cast<ptrdiff_t>(output_skip), output.end());
}

// Does the breaker headed by window[head] complete with `tail` inside the window?
bool tail_follows(std::span<const int32_t> window, size_t head, std::span<const int32_t> tail) {
    if (head + tail.size() >= window.size()) return false;
    return std::equal(tail.begin(), tail.end(), window.begin() + static_cast<ptrdiff_t>(head + 1));
}

// How many tokens at the end of the window a repeat may span: those after the latest complete breaker.
// Where several breakers share the latest head, the longest one cuts (as llama.cpp does).
int32_t repeat_limit(std::span<const int32_t> window, const DryBreakers* breakers) {
    const auto size = static_cast<int32_t>(window.size());
    if (breakers == nullptr || breakers->empty()) return size;
    for (int32_t from_end = 0; from_end < size; ++from_end) {
        const auto head = static_cast<size_t>(size - 1 - from_end);
        auto [first, last] = breakers->tails.equal_range(window[head]);
        int32_t longest_tail = -1;
        for (auto it = first; it != last; ++it) {
            const auto tail_size = static_cast<int32_t>(it->second.size());
            if (tail_size > longest_tail && tail_follows(window, head, it->second)) longest_tail = tail_size;
        }
        if (longest_tail >= 0) return from_end - longest_tail;
    }
    return size;
}

// Z-function: z[k] = the longest common prefix of `s` and s[k..]. On the window reversed, z[k] is how many
// tokens ending k before the last one repeat the window's own ending. Linear: the box [left, right) is the
// rightmost match found so far, and inside it earlier values are reused instead of compared again.
void z_function(std::span<const int32_t> s, std::vector<int32_t>& z) {
    const auto n = static_cast<int32_t>(s.size());
    z.assign(s.size(), 0);
    if (n == 0) return;
    z[0] = n;
    int32_t left = 0, right = 0;
    for (int32_t k = 1; k < n; ++k) {
        int32_t length = k < right ? std::min(right - k, z[static_cast<size_t>(k - left)]) : 0;
        while (k + length < n && s[static_cast<size_t>(length)] == s[static_cast<size_t>(k + length)]) ++length;
        z[static_cast<size_t>(k)] = length;
        if (k + length > right) left = k, right = k + length;
    }
}

// For each token that would continue a repeat of at least allowed_length, the longest such repeat.
void collect_continuations(const DryParams& params, int32_t limit, size_t vocab, DryWorkspace& workspace) {
    const std::vector<int32_t>& window = workspace.window;
    workspace.reversed.assign(window.rbegin(), window.rend());
    z_function(workspace.reversed, workspace.match_length);
    workspace.longest_by_token.resize(vocab, -1);
    const size_t last = window.size() - 1;
    for (size_t from_end = 1; from_end <= last; ++from_end) {
        const int32_t length = std::min(workspace.match_length[from_end], limit);
        if (length < params.allowed_length) continue;
        const int32_t next = window[last - from_end + 1];  // what followed the earlier copy
        if (next < 0 || static_cast<size_t>(next) >= vocab) continue;
        int32_t& longest = workspace.longest_by_token[static_cast<size_t>(next)];
        if (longest < 0) workspace.touched.push_back(next);
        longest = std::max(longest, length);
    }
}

// multiplier * base^(length - allowed_length), computed as llama.cpp does (the power in double, the
// exponent capped where base^exponent would pass the largest float), so the results agree to the bit.
float dry_penalty(const DryParams& params, int32_t length) {
    constexpr float kLogFloatMax = 88.7228391f;
    int32_t exponent = length - params.allowed_length;
    if (params.base > 1.000001f) {
        const auto max_exponent = static_cast<int32_t>(kLogFloatMax / std::log(params.base));
        if (max_exponent > 0) exponent = std::min(exponent, max_exponent);
    }
    return static_cast<float>(params.multiplier * std::pow(static_cast<double>(params.base), exponent));
}

}  // namespace

void apply_dry(std::span<float> logits, const DryParams& params, std::span<const int32_t> prompt,
               std::span<const int32_t> output, DryWorkspace& workspace) {
    if (!params.active()) return;
    fill_window(prompt, output, params.penalty_last_n, workspace.window);
    if (static_cast<int64_t>(workspace.window.size()) <= params.allowed_length) return;
    const int32_t limit = repeat_limit(workspace.window, params.breakers.get());
    if (limit < params.allowed_length) return;

    collect_continuations(params, limit, logits.size(), workspace);
    for (int32_t token : workspace.touched) {
        int32_t& longest = workspace.longest_by_token[static_cast<size_t>(token)];
        if (params.breakers == nullptr || !params.breakers->is_whole_breaker(token)) {
            logits[static_cast<size_t>(token)] -= dry_penalty(params, longest);
        }
        longest = -1;
    }
    workspace.touched.clear();
}

}  // namespace tempered
