#include "server/generation_loop.h"

#include <functional>

#include "api/errors.h"
#include "api/sse.h"
#include "server/degeneration_response.h"

namespace tempered {
namespace {

using Clock = std::chrono::steady_clock;

class GenerationLoop {
public:
    GenerationLoop(GenerationJob job, ServingMetrics& metrics, RequestLog& log)
        : job_(std::move(job)), metrics_(metrics), log_(log), outcome_(job_.outcome), degeneration_(job_.sampling) {}

    void stream(http::StreamWriter& writer);
    http::HttpResponse whole(const http::HttpRequest& request);
    void cancel() { job_.streams->cancel_all(); }

private:
    enum class End { Finished, ClientGone, EngineError, TimedOut };

    // Reads events until every stream is done. `client_alive` is asked whenever a poll comes back
    // empty; `deliver` gets each delta and says whether the client took it.
    End pump(const std::function<bool()>& client_alive, const std::function<bool(const ChoiceDelta&)>& deliver);
    void note(const ChoiceDelta& delta);
    void abort();
    // Past --request-timeout: the engine drops the request (its KV is freed), the log says "timeout".
    api::ApiError time_out();
    void log_finished(const std::string& outcome);
    api::Usage usage() const;
    double seconds_since_received() const {
        return std::chrono::duration<double>(Clock::now() - job_.received).count();
    }

    GenerationJob job_;
    ServingMetrics& metrics_;
    RequestLog& log_;
    std::string outcome_;
    double first_token_s_ = -1;  // -1 until a token arrives
    std::string engine_error_;
    int engine_error_status_ = 500;
    std::optional<int> engine_retry_after_;
    // The failure the generator reported, as the API answers it (500 ours, else the upstream's status; its
    // 429 as our own rate limit's, with its Retry-After).
    api::ApiError generation_error() const {
        if (engine_error_status_ == 500) return api::internal_error(engine_error_);
        if (engine_error_status_ == 429) return api::rate_limited(engine_error_, engine_retry_after_.value_or(1));
        api::ApiError error = api::internal_error(engine_error_);
        error.http_status = engine_error_status_;
        error.type = engine_error_status_ < 500 ? "invalid_request_error" : "upstream_error";
        error.retry_after_seconds = engine_retry_after_;
        return error;
    }
    DegenerationReports degeneration_;  // each choice's loop report, shown in its chunks and in the body
};

GenerationLoop::End GenerationLoop::pump(const std::function<bool()>& client_alive,
                                         const std::function<bool(const ChoiceDelta&)>& deliver) {
    StreamSet& streams = *job_.streams;
    while (!streams.all_done()) {
        // Checked before every poll, not only on empty ones: a request decoding steadily must end too.
        if (Clock::now() >= job_.deadline) return End::TimedOut;
        auto event = streams.next(kStreamPollInterval);
        if (!event) {
            if (!client_alive()) return End::ClientGone;
            continue;
        }
        if (event->error) {
            engine_error_ = *event->error;
            engine_error_status_ = event->error_status;
            engine_retry_after_ = event->retry_after_seconds;
            return End::EngineError;
        }
        for (const auto& delta : event->deltas) {
            note(delta);
            if (!deliver(delta)) return End::ClientGone;
        }
    }
    return End::Finished;
}

void GenerationLoop::note(const ChoiceDelta& delta) {
    if (first_token_s_ < 0 && !delta.tokens.empty()) first_token_s_ = seconds_since_received();
    // With n > 1 the request's outcome is its first choice's.
    if (delta.finish && delta.index == 0) outcome_ = finish_reason_name(*delta.finish);
    degeneration_.note(delta);
}

void GenerationLoop::abort() {
    cancel();
    metrics_.count_aborted();
    log_finished("aborted");
}

api::ApiError GenerationLoop::time_out() {
    cancel();
    metrics_.count_timeout();
    log_finished("timeout");
    return api::request_timeout(job_.timeout_seconds);
}

api::Usage GenerationLoop::usage() const {
    const GenerationUsage usage = job_.streams->usage();
    return {usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens};
}

void GenerationLoop::log_finished(const std::string& outcome) {
    const api::Usage counts = usage();
    nlohmann::json entry = {{"id", job_.request_id},
                            {"endpoint", job_.endpoint},
                            {"outcome", outcome},
                            {"prompt_tokens", counts.prompt_tokens},
                            {"cached_tokens", counts.cached_tokens},
                            {"completion_tokens", counts.completion_tokens},
                            {"ttft_s", first_token_s_},
                            {"total_s", seconds_since_received()},
                            {"sampling", job_.sampling}};
    if (job_.client) entry["client"] = *job_.client;
    // Only a request whose first choice looped has the field, so other lines keep their shape.
    if (auto loop = degeneration_.of_choice(0)) entry["degeneration"] = std::move(*loop);
    log_.write(entry);
    if (job_.prefix_note && log_.debug_enabled())
        log_.debug(job_.request_id + " " + job_.prefix_note(counts.cached_tokens));
}

void GenerationLoop::stream(http::StreamWriter& writer) {
    ResponseBuilder& builder = *job_.builder;
    std::vector<nlohmann::json> opening = builder.opening_chunks();
    if (job_.report_sampling && !opening.empty()) builder.show_sampling(opening.front(), job_.sampling);
    for (const auto& chunk : opening)
        if (!writer.write(builder.frame(chunk))) return abort();

    const End end = pump([&writer] { return writer.is_connection_alive(); },
                         [&](const ChoiceDelta& delta) {
                             for (nlohmann::json& chunk : builder.on_delta(delta)) {
                                 degeneration_.attach_to_chunk(chunk, delta.index);
                                 if (!writer.write(builder.frame(chunk))) return false;
                             }
                             return true;
                         });
    if (end == End::ClientGone) return abort();
    if (end == End::TimedOut) {
        writer.write(builder.error_event(time_out()));
        if (builder.ends_with_done()) writer.write(api::sse_data("[DONE]"));
        return;
    }
    if (end == End::EngineError) {
        cancel();  // the other choices and prompts of the request stop too, and free their KV
        writer.write(builder.error_event(generation_error()));
        outcome_ = "error";
    } else {
        for (const auto& chunk : builder.closing_chunks(usage(), job_.include_usage))
            writer.write(builder.frame(chunk));
    }
    if (builder.ends_with_done()) writer.write(api::sse_data("[DONE]"));
    log_finished(outcome_);
}

http::HttpResponse GenerationLoop::whole(const http::HttpRequest& request) {
    const End end = pump([&request] { return request.is_connection_alive(); },
                         [this](const ChoiceDelta& delta) {
                             job_.builder->on_delta(delta);  // a whole response keeps the text, sends nothing
                             return true;
                         });
    if (end == End::ClientGone) {
        abort();
        return job_.builder->error_response(api::invalid_request("the client disconnected"));
    }
    if (end == End::TimedOut) {
        http::HttpResponse response = job_.builder->error_response(time_out());
        // The OpenAI SDKs retry a 408 by default: the request just ran for the whole timeout, so running it
        // twice more would triple the costliest work there is. Both SDKs honour this header.
        response.headers.emplace("x-should-retry", "false");
        return response;
    }
    if (end == End::EngineError) {
        cancel();  // the other choices and prompts of the request stop too, and free their KV
        log_finished("error");
        return job_.builder->error_response(generation_error());
    }
    nlohmann::json body = job_.builder->final_body(usage());
    if (job_.report_sampling) job_.builder->show_sampling(body, job_.sampling);
    degeneration_.attach_to_body(body);
    log_finished(outcome_);
    return http::HttpResponse::json(200, api::dump_json(body));
}

}  // namespace

http::HttpResponse run_generation(GenerationJob job, const http::HttpRequest& request, ServingMetrics& metrics,
                                  RequestLog& log) {
    const bool stream = job.stream;
    auto loop = std::make_shared<GenerationLoop>(std::move(job), metrics, log);
    if (!stream) return loop->whole(request);
    // The loop outlives this call: the HTTP server runs the producer after the handler returns.
    return api::sse_response([loop](http::StreamWriter& writer) { loop->stream(writer); },
                             [loop](bool completed) {
                                 if (!completed) loop->cancel();
                             });
}

}  // namespace tempered
