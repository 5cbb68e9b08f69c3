// POST /v1/completions: one or several prompts (text or token ids), n choices each, through the shared
// generation path; max_tokens 0 only scores the prompts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/completion_request.h"
#include "edge/guarded_routes.h"
#include "server/generation_path.h"
#include "server/stream_set.h"

namespace tempered {

class CompletionService {
public:
    // `path` outlives the service.
    explicit CompletionService(GenerationPath& path) : path_(path) {}

    void register_routes(GuardedRoutes& routes);

private:
    // A completions request's prompts: token ids for the engine, text for echo.
    struct CompletionPrompts {
        std::vector<std::vector<int32_t>> tokens;
        std::vector<std::string> texts;
    };

    http::HttpResponse completions(const http::HttpRequest& request);
    // The checks that need the model, the prompts, and their submission (or, for max_tokens 0, their
    // scoring only) into `streams`.
    std::optional<api::ApiError> check_completion_request(const api::CompletionRequest& request) const;
    CompletionPrompts completion_prompts(const api::CompletionRequest& request) const;
    std::optional<api::ApiError> submit_prompts(const api::CompletionRequest& request, const CompletionPrompts& prompts,
                                                const ResolvedSampling& sampling, bool score_only, StreamSet& streams);

    GenerationPath& path_;
};

}  // namespace tempered
