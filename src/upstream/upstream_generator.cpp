#include "upstream/upstream_generator.h"

#include <thread>
#include <vector>

#include "http/httplib_include.h"
#include "upstream/completion_body.h"
#include "upstream/sse_reader.h"
#include "upstream/upstream_choice.h"

namespace tempered::upstream {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::optional<FinishReason> finish_reason_from(const nlohmann::json& value) {
    if (!value.is_string()) return std::nullopt;
    if (value == "length") return FinishReason::Length;
    return FinishReason::Stop;  // "stop", and an engine's own names for an ended answer
}

// What the front cannot do over another engine's stream: it needs the draw, or a grammar the upstream would
// have to apply. Tool calls are still read and checked on the front (validation `flag` at least), so their
// grammar is left out instead.
std::optional<Unsupported> unsupported_by_upstream(const GenerationOptions& options) {
    if (options.top_logprobs >= 0) return Unsupported{"logprobs", "logprobs are not available in upstream mode yet"};
    if (options.constraint && !options.tool_calls)
        return Unsupported{"response_format", "response_format is not applied in upstream mode yet"};
    if (options.reasoning.budget)
        return Unsupported{"thinking_token_budget",
                           "a reasoning budget needs the draw; upstream mode cannot force the end of reasoning yet"};
    if (options.guard.active() && options.guard.action == DegenerationAction::Resample)
        return Unsupported{"repetition_detection",
                           "the degeneration guard's resample needs the draw; in upstream mode use flag or stop"};
    return std::nullopt;
}

}  // namespace

Result<UpstreamAddress> parse_upstream_url(const std::string& url) {
    const size_t scheme_end = url.find("://");
    if (scheme_end == std::string::npos ||
        (url.substr(0, scheme_end) != "http" && url.substr(0, scheme_end) != "https"))
        return Error{"--upstream must be an http:// or https:// URL (got '" + url + "')"};
    const size_t path_start = url.find('/', scheme_end + 3);
    UpstreamAddress address;
    address.scheme_host_port = url.substr(0, path_start);
    if (address.scheme_host_port.size() == scheme_end + 3) return Error{"--upstream names no host (got '" + url + "')"};
    std::string path = path_start == std::string::npos ? "" : url.substr(path_start);
    while (!path.empty() && path.back() == '/') path.pop_back();
    if (path.ends_with("/v1")) path.resize(path.size() - 3);
    address.path_prefix = path;
    return address;
}

// One upstream request: the options it was asked for, its reader's stream and its choices.
struct UpstreamGenerator::Job {
    GenerationOptions options;
    std::shared_ptr<GenerationStream> stream = std::make_shared<GenerationStream>();
    std::vector<std::unique_ptr<UpstreamChoice>> choices;
    GenerationUsage usage;
    std::chrono::steady_clock::time_point submitted = std::chrono::steady_clock::now();
    std::optional<double> first_token_seconds;
    SseReader sse;
    int status = 0;
    std::string error_body;  // an answer other than 200: its body
    bool saw_done = false;
    bool malformed = false;   // an event that did not parse
    bool ended_here = false;  // a choice ended on the front first: the upstream's rest is not wanted

    bool all_finished() const {
        for (const auto& choice : choices)
            if (!choice->finished()) return false;
        return true;
    }
};

UpstreamGenerator::UpstreamGenerator(UpstreamSettings settings, UpstreamAddress address, const Tokenizer& tokenizer,
                                     EngineObserver* observer)
    : settings_(std::move(settings)), address_(std::move(address)), tokenizer_(tokenizer), observer_(observer) {}

UpstreamGenerator::~UpstreamGenerator() {
    shutting_down_ = true;
    std::unique_lock lock(mutex_);
    all_done_.wait(lock, [this] { return running_ == 0; });
}

SubmitResult UpstreamGenerator::submit(GenerationOptions options) {
    if (draining_) return {nullptr, SubmitRefusal::Draining, std::nullopt};
    if (auto unsupported = unsupported_by_upstream(options)) return {nullptr, std::nullopt, std::move(unsupported)};
    if (running_ >= settings_.max_running) return {nullptr, SubmitRefusal::QueueFull, std::nullopt};
    options.constraint = nullptr;  // tool calls: checked on the front (see unsupported_by_upstream)
    auto job = std::make_shared<Job>();
    job->options = std::move(options);
    job->usage.prompt_tokens = static_cast<int64_t>(job->options.prompt.size());
    for (int i = 0; i < job->options.n; ++i)
        job->choices.push_back(std::make_unique<UpstreamChoice>(i, job->options, tokenizer_));
    ++running_;
    std::thread([this, job] { run(job); }).detach();
    return {job->stream, std::nullopt, std::nullopt};
}

EngineStats UpstreamGenerator::stats() const {
    EngineStats stats;
    stats.running_requests = running_;
    return stats;
}

namespace {

// One streamed chunk's choices into the reader's event: each choice's tokens (or, without ids, its text)
// through its output stages, then the upstream's finish.
// `ended_here` is set when a choice ended on the front before the upstream ended it (a stop string, the guard).
GenerationEvent read_chunk(const nlohmann::json& chunk, std::vector<std::unique_ptr<UpstreamChoice>>& choices,
                           GenerationUsage& usage, EngineObserver* observer, bool& ended_here) {
    GenerationEvent event;
    const auto found = chunk.find("choices");
    if (found == chunk.end() || !found->is_array()) return event;
    for (const nlohmann::json& upstream : *found) {
        const int index = upstream.value("index", 0);
        if (index < 0 || index >= static_cast<int>(choices.size())) continue;
        UpstreamChoice& choice = *choices[static_cast<size_t>(index)];
        ChoiceDelta delta;
        delta.index = index;
        const auto ids = upstream.find("token_ids");
        if (ids != upstream.end() && ids->is_array()) {
            for (const nlohmann::json& id : *ids)
                if (id.is_number_integer()) choice.take_token(id.get<int32_t>(), delta, observer);
        } else if (upstream.contains("text") && upstream["text"].is_string()) {
            choice.take_text(upstream["text"].get<std::string>(), delta);
        }
        usage.completion_tokens += static_cast<int64_t>(delta.tokens.size());
        const auto reason = finish_reason_from(upstream.value("finish_reason", nlohmann::json()));
        if (choice.finished() && delta.finish && !reason) ended_here = true;
        if (reason) choice.end(*reason, delta);
        event.deltas.push_back(std::move(delta));
    }
    return event;
}

std::string upstream_error_message(int status, const std::string& body) {
    std::string message = "the upstream answered HTTP " + std::to_string(status);
    const nlohmann::json json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (json.is_object() && json.contains("error") && json["error"].is_object() && json["error"].contains("message"))
        return message + ": " + json["error"]["message"].dump();
    return body.empty() ? message : message + ": " + body.substr(0, 300);
}

}  // namespace

void UpstreamGenerator::run(std::shared_ptr<Job> job) {
    httplib::Client client(address_.scheme_host_port);
    client.set_connection_timeout(settings_.timeout);
    client.set_read_timeout(settings_.timeout);
    if (!settings_.api_key.empty()) client.set_bearer_token_auth(settings_.api_key);
    httplib::Request request;
    request.method = "POST";
    request.path = address_.path_prefix + "/v1/completions";
    request.headers = {{"Content-Type", "application/json"}, {"Accept", "text/event-stream"}};
    request.body = completion_body(job->options, settings_.model).dump();
    request.response_handler = [&job](const httplib::Response& response) {
        job->status = response.status;
        return true;
    };
    request.content_receiver = [this, &job](const char* data, size_t size, uint64_t, uint64_t) {
        if (job->status != 200) {
            job->error_body.append(data, size);
            return job->error_body.size() < 65536;
        }
        for (const std::string& payload : job->sse.feed(std::string_view(data, size))) {
            if (payload == "[DONE]") {
                job->saw_done = true;
                continue;
            }
            const nlohmann::json chunk = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
            if (chunk.is_discarded()) {
                job->malformed = true;
                return false;
            }
            if (chunk.contains("usage") && chunk["usage"].is_object()) {
                const nlohmann::json& usage = chunk["usage"];
                if (usage.contains("prompt_tokens_details") && usage["prompt_tokens_details"].is_object())
                    job->usage.cached_tokens = usage["prompt_tokens_details"].value("cached_tokens", int64_t{0});
            }
            GenerationEvent event;
            {
                std::lock_guard lock(observer_mutex_);
                event = read_chunk(chunk, job->choices, job->usage, observer_, job->ended_here);
                if (!job->first_token_seconds && job->usage.completion_tokens > 0) {
                    job->first_token_seconds = seconds_since(job->submitted);
                    if (observer_) observer_->on_first_token(*job->first_token_seconds);
                }
            }
            if (!event.deltas.empty()) job->stream->push(std::move(event));
        }
        // Every choice ended, one of them here (a stop string, the guard), the reader left, or the server
        // stops: end the upstream request by closing its connection. Choices the upstream ended are read
        // to its [DONE], for the usage chunk.
        const bool cut_short = job->all_finished() && job->ended_here;
        return !cut_short && !job->stream->cancelled() && !shutting_down_;
    };
    const httplib::Result result = client.send(request);
    if (job->stream->cancelled()) return finish(*job, RequestOutcome::Abort);
    if (job->all_finished()) return finish(*job, RequestOutcome::Stop);
    const std::string upstream = "the upstream " + address_.scheme_host_port;
    if (!result && job->status == 0)
        return finish(*job, RequestOutcome::Error, upstream + " is unreachable: " + httplib::to_string(result.error()),
                      503);
    // Its 4xx is the request's fault, said with its status; anything else of its own is a bad gateway.
    if (job->status != 200) {
        const int status = job->status >= 400 && job->status < 500 ? job->status : 502;
        return finish(*job, RequestOutcome::Error, upstream_error_message(job->status, job->error_body), status);
    }
    if (job->malformed) return finish(*job, RequestOutcome::Error, upstream + " sent an event that is not JSON", 502);
    const std::string why =
        result ? "ended its stream" : "stopped answering (" + httplib::to_string(result.error()) + ")";
    return finish(*job, RequestOutcome::Error, upstream + " " + why + " before every choice did", 502);
}

void UpstreamGenerator::finish(Job& job, RequestOutcome outcome, std::optional<std::string> error, int status) {
    if (outcome == RequestOutcome::Stop) {
        bool length = false, repetition = false;
        for (const auto& choice : job.choices) {
            length |= choice->finish_reason() == FinishReason::Length;
            repetition |= choice->finish_reason() == FinishReason::Repetition;
        }
        outcome = repetition ? RequestOutcome::Repetition : length ? RequestOutcome::Length : RequestOutcome::Stop;
    }
    if (observer_) {
        std::lock_guard lock(observer_mutex_);
        RequestTimings timings;
        timings.first_token_seconds = job.first_token_seconds.value_or(0);
        timings.total_seconds = seconds_since(job.submitted);
        observer_->on_request_finished(outcome, job.usage, timings);
    }
    GenerationEvent last;
    last.done = true;
    last.error = std::move(error);
    last.error_status = status;
    last.usage = job.usage;
    job.stream->push(std::move(last));
    std::lock_guard lock(mutex_);
    --running_;
    all_done_.notify_all();
}

}  // namespace tempered::upstream
