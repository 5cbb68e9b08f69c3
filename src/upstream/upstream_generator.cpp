#include "upstream/upstream_generator.h"

#include <thread>
#include <vector>

#include "http/httplib_include.h"
#include "upstream/chat_chunk_reader.h"
#include "upstream/chunk_reader.h"
#include "upstream/completion_body.h"
#include "upstream/llamacpp_native.h"
#include "upstream/model_list.h"
#include "upstream/sse_reader.h"
#include "upstream/upstream_choice.h"
#include "upstream/upstream_client.h"
#include "upstream/upstream_grammar.h"

namespace tempered::upstream {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What the front cannot do over another engine's stream yet: logprobs where the front may append the
// reasoning's forced end (the upstream gives none for tokens it did not draw), and a response_format for an
// upstream that takes no grammar. Tool calls are still read and checked on the front (validation `flag` at
// least), so a tool-call grammar the upstream cannot take is left out instead.
std::optional<Unsupported> unsupported_by_upstream(const GenerationOptions& options,
                                                   const UpstreamCapabilities& capabilities) {
    if (options.top_logprobs >= 0 && !capabilities.logprobs_by_id)
        return Unsupported{"logprobs",
                           "this upstream cannot name its logprobs' tokens by id "
                           "(return_tokens_as_token_ids); see --upstream-kind"};
    if (options.top_logprobs >= 0 && options.reasoning.enabled())
        return Unsupported{"logprobs",
                           "logprobs of a reasoning model's answers are not available in upstream mode "
                           "yet: the tokens of a forced end of reasoning would have none"};
    if (options.min_tokens > 0 && capabilities.llamacpp_native)
        return Unsupported{"min_tokens", "llama-server takes no min_tokens, so it cannot be applied upstream"};
    if (options.constraint && !options.tool_calls && !capabilities.grammar)
        return Unsupported{"response_format",
                           "this upstream takes no grammar, so response_format cannot be applied; see --upstream-kind"};
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
    std::optional<UpstreamGrammar> grammar;  // the constraint as this upstream takes it, if it can
    GenerationUsage usage;
    std::chrono::steady_clock::time_point submitted = std::chrono::steady_clock::now();
    std::optional<double> first_token_seconds;
    // The leg now streaming: the first request, then one continuation per choice whose reasoning was ended
    // by force or whose sampling the guard switched (upstream_choice.h). leg_choices[i] is the choice the
    // upstream's choice i feeds.
    std::vector<int> leg_choices;
    SseReader sse;
    int status = 0;
    std::optional<int> retry_after;  // the upstream's Retry-After, in seconds
    std::string error_body;          // an answer other than 200: its body
    bool malformed = false;          // an event that did not parse
    bool ended_here = false;         // a choice ended on the front first: the upstream's rest is not wanted
    bool left_grammar = false;       // a choice drew a token outside the grammar this leg sent

    bool all_finished() const {
        for (const auto& choice : choices)
            if (!choice->finished()) return false;
        return true;
    }
    // Nothing more is wanted from this leg: each choice has ended or waits for its continuation.
    bool leg_settled() const {
        for (const auto& choice : choices)
            if (!choice->finished() && !choice->awaiting_continuation()) return false;
        return true;
    }
    bool any_awaiting() const {
        for (const auto& choice : choices)
            if (choice->awaiting_continuation()) return true;
        return false;
    }
    void start_leg(std::vector<int> choice_indices) {
        leg_choices = std::move(choice_indices);
        sse = SseReader{};
        status = 0;
        retry_after.reset();
        error_body.clear();
        malformed = false;
        left_grammar = false;
    }
};

UpstreamGenerator::UpstreamGenerator(UpstreamSettings settings, UpstreamAddress address, const Tokenizer& tokenizer,
                                     EngineObserver* observer, UpstreamMetrics* metrics)
    : settings_(std::move(settings)),
      address_(std::move(address)),
      capabilities_(capabilities_of(settings_.kind)),
      tokenizer_(tokenizer),
      observer_(observer),
      metrics_(metrics) {}

UpstreamGenerator::~UpstreamGenerator() {
    shutting_down_ = true;
    std::unique_lock lock(mutex_);
    all_done_.wait(lock, [this] { return running_ == 0; });
}

SubmitResult UpstreamGenerator::submit(GenerationOptions options) {
    if (draining_) return {nullptr, SubmitRefusal::Draining, std::nullopt};
    if (auto unsupported = unsupported_by_upstream(options, capabilities_))
        return {nullptr, std::nullopt, std::move(unsupported)};
    if (running_ >= settings_.max_running) return {nullptr, SubmitRefusal::QueueFull, std::nullopt};
    auto job = std::make_shared<Job>();
    job->options = std::move(options);
    if (job->options.constraint) job->grammar = upstream_grammar(*job->options.constraint, capabilities_);
    job->usage.prompt_tokens = static_cast<int64_t>(job->options.prompt.size());
    for (int i = 0; i < job->options.n; ++i)
        job->choices.push_back(std::make_unique<UpstreamChoice>(i, job->options, tokenizer_, job->grammar.has_value()));
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

// An upstream's Retry-After in seconds (the HTTP-date form is not used by the engines this fronts).
std::optional<int> retry_after_of(const httplib::Response& response) {
    const std::string value = response.get_header_value("Retry-After");
    if (value.empty() || value.size() > 9 || value.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    return std::stoi(value);
}

bool succeeded(UpstreamOutcome outcome) {
    return outcome == UpstreamOutcome::Completed || outcome == UpstreamOutcome::EndedOnFront;
}

// What the serving metrics count, as for our own engine's requests: a completed one by its first choice's
// finish reason, one that failed as an error, one the client or the server ended as an abort.
RequestOutcome request_outcome(const std::vector<std::unique_ptr<UpstreamChoice>>& choices, UpstreamOutcome ended) {
    if (ended == UpstreamOutcome::Cancelled) return RequestOutcome::Abort;
    if (!succeeded(ended)) return RequestOutcome::Error;
    return finished_outcome(choices.front()->finish_reason());
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
    if (metrics_) metrics_->started();
    std::vector<int> all(job->choices.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    job->start_leg(std::move(all));
    const bool grammar = job->choices.front()->leg_takes_grammar();  // the same for every choice at the start
    for (auto& choice : job->choices) choice->start_leg(grammar);
    Ending ending = send_leg(*job, job->options, grammar);
    // A choice whose reasoning was ended by force, or that the guard resampled, draws the rest in a
    // continuation of its own.
    for (size_t i = 0; i < job->choices.size() && succeeded(ending.outcome); ++i) {
        UpstreamChoice& choice = *job->choices[i];
        if (!choice.awaiting_continuation()) continue;
        job->start_leg({static_cast<int>(i)});
        const bool with_grammar = choice.leg_takes_grammar();
        choice.start_leg(with_grammar);
        ending = send_leg(*job, choice.continuation(), with_grammar);
    }
    finish(*job, ending);
}

// One upstream request (the first, or a continuation) streamed into the job's choices.
UpstreamGenerator::Ending UpstreamGenerator::send_leg(Job& job, const GenerationOptions& leg, bool with_grammar) {
    httplib::Client client = upstream_client(address_, settings_.api_key, settings_.timeout);
    httplib::Request request;
    request.method = "POST";
    const bool chat = !leg.passthrough_chat.empty();
    request.path = address_.path_prefix + (chat                            ? "/v1/chat/completions"
                                           : capabilities_.llamacpp_native ? "/completion"
                                                                           : "/v1/completions");
    request.headers = {{"Content-Type", "application/json"}, {"Accept", "text/event-stream"}};
    nlohmann::json body = chat                            ? chat_body(leg, settings_.model, capabilities_)
                          : capabilities_.llamacpp_native ? llamacpp_completion_body(leg)
                                                          : completion_body(leg, settings_.model, capabilities_);
    if (!chat && !capabilities_.prompt_ids) body["prompt"] = tokenizer_.decode(leg.prompt);  // specials written out
    if (with_grammar) add_upstream_grammar(*job.grammar, capabilities_, tokenizer_, body);
    request.body = body.dump();
    request.response_handler = [&job](const httplib::Response& response) {
        job.status = response.status;
        job.retry_after = retry_after_of(response);
        return true;
    };
    request.content_receiver = [this, &job](const char* data, size_t size, uint64_t, uint64_t) {
        return receive(job, std::string_view(data, size));
    };
    const httplib::Result result = client.send(request);
    return outcome_of(job, result);
}

// One piece of the upstream's answer: an error body kept (bounded), or its SSE events read into the reader's
// stream. False ends the upstream request: every choice ended, one of them here (a stop string, the guard),
// the reader left, or the server stops. Choices the upstream ended are read to its [DONE], for the usage chunk.
bool UpstreamGenerator::receive(Job& job, std::string_view data) {
    if (job.status != 200) {
        job.error_body.append(data);
        return job.error_body.size() < 65536;
    }
    for (const std::string& payload : job.sse.feed(data)) {
        if (payload == "[DONE]") continue;
        nlohmann::json chunk = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
        if (!chunk.is_object()) {
            job.malformed = true;
            return false;
        }
        const bool chat = !job.options.passthrough_chat.empty();
        if (capabilities_.llamacpp_native && !chat) chunk = from_llamacpp_chunk(chunk);
        if (names_a_foreign_token(chunk, tokenizer_.vocab_size())) {
            job.malformed = true;
            return false;
        }
        read_usage(chunk, job.usage);
        GenerationEvent event;
        {
            std::lock_guard lock(observer_mutex_);
            event = chat ? read_chat_chunk(chunk, job.choices, job.usage, observer_, job.ended_here, job.malformed)
                         : read_chunk(chunk, job.choices, job.leg_choices, job.usage, observer_, job.ended_here);
            if (job.malformed) return false;
            if (!job.first_token_seconds && (job.usage.completion_tokens > 0 || (chat && !event.deltas.empty()))) {
                job.first_token_seconds = seconds_since(job.submitted);
                if (observer_) observer_->on_first_token(*job.first_token_seconds);
                if (metrics_) metrics_->first_token(*job.first_token_seconds);
            }
        }
        for (const auto& choice : job.choices) job.left_grammar = job.left_grammar || choice->left_grammar();
        if (job.left_grammar) return false;
        if (!event.deltas.empty()) job.stream->push(std::move(event));
    }
    const bool cut_short = job.leg_settled() && (job.ended_here || job.any_awaiting());
    return !cut_short && !job.stream->cancelled() && !shutting_down_;
}

// How the upstream request ended, and what the reader is told when that is a failure.
UpstreamGenerator::Ending UpstreamGenerator::outcome_of(const Job& job, const httplib::Result& result) const {
    if (job.stream->cancelled() || (shutting_down_ && !job.all_finished())) return {UpstreamOutcome::Cancelled};
    const std::string upstream = "the upstream " + address_.scheme_host_port;
    if (job.left_grammar)
        return {UpstreamOutcome::Malformed,
                upstream + " drew a token outside the grammar it was sent (does it apply '" +
                    std::string(capabilities_.grammar) + "'? see --upstream-kind)",
                502};
    if (job.leg_settled()) return {job.ended_here ? UpstreamOutcome::EndedOnFront : UpstreamOutcome::Completed};
    if (!result && job.status == 0)
        return {UpstreamOutcome::Unreachable, upstream + " is unreachable: " + httplib::to_string(result.error()), 503};
    // Its 4xx is the request's fault, said with its status; anything else of its own is a bad gateway.
    if (job.status != 200) {
        const bool client_error = job.status >= 400 && job.status < 500;
        return {client_error ? UpstreamOutcome::Rejected : UpstreamOutcome::Failed,
                upstream_error_message(job.status, job.error_body), client_error ? job.status : 502};
    }
    if (job.malformed)
        return {UpstreamOutcome::Malformed,
                upstream +
                    " sent an event that is not JSON, a token id outside the model's vocabulary (is it "
                    "serving another model?), or more tool calls than the front keeps",
                502};
    const std::string why =
        result ? "ended its stream" : "stopped answering (" + httplib::to_string(result.error()) + ")";
    return {UpstreamOutcome::Broken, upstream + " " + why + " before every choice did", 502};
}

void UpstreamGenerator::finish(Job& job, const Ending& ending) {
    const double seconds = seconds_since(job.submitted);
    if (metrics_) metrics_->finished(ending.outcome, seconds);
    if (observer_) {
        std::lock_guard lock(observer_mutex_);
        RequestTimings timings;
        timings.first_token_seconds = job.first_token_seconds.value_or(0);
        timings.total_seconds = seconds;
        observer_->on_request_finished(request_outcome(job.choices, ending.outcome), job.usage, timings);
    }
    GenerationEvent last;
    last.done = true;
    last.error = ending.error;
    last.error_status = ending.status;
    if (ending.error && (ending.status == 429 || ending.status == 503)) last.retry_after_seconds = job.retry_after;
    last.usage = job.usage;
    job.stream->push(std::move(last));
    std::lock_guard lock(mutex_);
    --running_;
    all_done_.notify_all();
}

std::optional<std::string> UpstreamGenerator::not_ready() const {
    std::lock_guard lock(ready_mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (now - ready_checked_ < std::chrono::seconds(1)) return not_ready_;
    const auto timeout = std::min(settings_.timeout, std::chrono::seconds(5));
    auto listed = first_upstream_model(address_, settings_.api_key, timeout);
    not_ready_ = listed ? std::nullopt : std::optional<std::string>(listed.error().message);
    ready_checked_ = std::chrono::steady_clock::now();
    return not_ready_;
}

}  // namespace tempered::upstream
