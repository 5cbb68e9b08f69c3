// Closed-loop load: `concurrency` workers, each with its own keep-alive connection, take the next
// request index from a shared counter and send it, until every prompt has been sent once. So at most
// `concurrency` requests are in flight, and a new one starts as soon as one finishes.
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <vector>

#include "loadgen/base_url.h"
#include "loadgen/progress.h"
#include "loadgen/request_body.h"
#include "loadgen/request_record.h"

namespace tempered::loadgen {

struct PhaseResult {
    std::vector<RequestRecord> records;  // in request order: records[i] is prompts[i]'s request
    double duration_s = 0;               // from the first request sent to the last one finished
};

// Request i sends prompts[i]. `counters` (may be null) follow the requests as they finish.
PhaseResult run_phase(const BaseUrl& url, const RequestSettings& settings, std::span<const std::string> prompts,
                      int concurrency, std::chrono::duration<double> timeout, ProgressCounters* counters);

}  // namespace tempered::loadgen
