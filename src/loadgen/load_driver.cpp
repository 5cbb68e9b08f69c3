#include "loadgen/load_driver.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "loadgen/http_session.h"
#include "loadgen/request_runner.h"

namespace tempered::loadgen {

PhaseResult run_phase(const BaseUrl& url, const RequestSettings& settings, std::span<const std::string> prompts,
                      int concurrency, std::chrono::duration<double> timeout, ProgressCounters* counters) {
    PhaseResult result;
    result.records.resize(prompts.size());
    if (prompts.empty()) return result;
    std::atomic<size_t> next{0};
    auto worker = [&] {
        HttpSession session(url, timeout);
        for (size_t i = next++; i < prompts.size(); i = next++) {
            RequestRecord record =
                run_request(session, settings, prompts[i], timeout, counters ? &counters->output_tokens : nullptr);
            if (counters) {
                // The text chunks were counted as they came; usage has the exact count.
                const auto counted = static_cast<int64_t>(record.content_times_s.size());
                if (record.ok) counters->output_tokens += record.output_tokens() - counted;
                else ++counters->failed;
                ++counters->finished;
            }
            result.records[i] = std::move(record);  // each index is written by one worker only
        }
    };
    const size_t workers = std::min(prompts.size(), static_cast<size_t>(std::max(1, concurrency)));
    std::vector<std::thread> threads;
    threads.reserve(workers);
    for (size_t w = 0; w < workers; ++w) threads.emplace_back(worker);
    for (auto& thread : threads) thread.join();

    auto first = result.records.front().start, last = result.records.front().end;
    for (const auto& record : result.records) {
        first = std::min(first, record.start);
        last = std::max(last, record.end);
    }
    result.duration_s = std::chrono::duration<double>(last - first).count();
    return result;
}

}  // namespace tempered::loadgen
