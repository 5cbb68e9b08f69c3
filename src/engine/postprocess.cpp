#include "engine/postprocess.h"

#include <algorithm>

namespace tempered {

namespace {
double seconds_between(EngineClock::time_point from, EngineClock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}
}  // namespace

Postprocessor::Postprocessor(const Tokenizer& tokenizer, const ModelConfig& config, KvBlockPool& kv,
                             EngineObserver* observer, SequenceIds& sequence_ids)
    : tokenizer_(tokenizer), config_(config), kv_(kv), observer_(observer), sequence_ids_(sequence_ids) {
    for (int32_t token = 0; token < std::min<int64_t>(tokenizer.vocab_size(), config.vocab_size); ++token)
        if (tokenizer.is_end_of_generation(token)) end_of_generation_tokens_.push_back(token);
}

std::span<Request* const> Postprocessor::apply(const StepPlan& plan, const Status& forward, const float* logits) {
    touched_.clear();
    finished_.clear();
    const auto vocab = static_cast<size_t>(config_.vocab_size);
    size_t logits_row = 0;
    for (const ScheduledChunk& chunk : plan.chunks) {
        Request& request = *chunk.request;
        if (std::find(touched_.begin(), touched_.end(), &request) == touched_.end()) touched_.push_back(&request);
        if (!forward) continue;
        Sequence& sequence = *chunk.sequence;
        sequence.computed += chunk.count;
        kv_.register_computed(sequence.id, sequence.tokens, sequence.computed);
        if (sequence.computed != static_cast<int64_t>(sequence.tokens.size())) continue;  // mid-prefill chunk
        emit_next_tokens(request, sequence, logits + logits_row++ * vocab);
    }
    for (Request* request : touched_) {
        if (forward && !request->all_finished()) continue;
        std::optional<std::string> error;
        if (!forward) error = "model forward failed: " + forward.error().message;
        finish(*request, std::move(error));
        finished_.push_back(request);
    }
    return finished_;
}

// One event for the sequence's new token; after a shared prefill, one event with every choice's first.
void Postprocessor::emit_next_tokens(Request& request, Sequence& sequence, const float* logits) {
    GenerationEvent event;
    if (!request.forked && request.options.n > 1) {
        fork_choices(request);
        for (auto& choice : request.sequences) event.deltas.push_back(sample(request, *choice, logits));
    } else {
        request.forked = true;
        event.deltas.push_back(sample(request, sequence, logits));
    }
    request.stream->push(std::move(event));
}

void Postprocessor::fork_choices(Request& request) {
    Sequence& first = *request.sequences.front();
    for (int choice = 1; choice < request.options.n; ++choice) {
        auto child = std::make_unique<Sequence>(sequence_ids_.next(), choice, first.tokens, first.prompt_length,
                                                request.options.seed, tokenizer_, request.options.stop,
                                                request.options.constraint);
        // Shares the prompt's full blocks; without room it recomputes later instead.
        child->computed = kv_.fork(first.id, child->id, first.computed) ? first.computed : 0;
        request.sequences.push_back(std::move(child));
    }
    request.forked = true;
}

ChoiceDelta Postprocessor::sample(Request& request, Sequence& sequence, const float* logits) {
    const GenerationOptions& options = request.options;
    const std::span<const int32_t> tokens(sequence.tokens);
    const auto prompt_length = static_cast<size_t>(sequence.prompt_length);
    const bool end_masked = options.ignore_eos || sequence.generated() < options.min_tokens;
    const TokenHistory history{
        tokens.first(prompt_length), tokens.subspan(prompt_length),
        end_masked ? std::span<const int32_t>(end_of_generation_tokens_) : std::span<const int32_t>()};
    grammar::ConstraintState* constraint = sequence.constraint ? &*sequence.constraint : nullptr;
    ConstrainedToken drawn = next_constrained_token(
        {logits, static_cast<size_t>(config_.vocab_size)},
        {options.sampling, options.penalties, options.top_logprobs, options.dry}, history, constraint, sequence.rng,
        workspace_, constrained_workspace_);
    if (observer_ && drawn.mask_seconds) observer_->on_grammar_mask(*drawn.mask_seconds);
    SampledToken& next = drawn.sampled;
    ChoiceDelta delta;
    delta.index = sequence.choice;
    if (constraint && !constraint->accept(next.token)) {
        end_refused_by_grammar(sequence, delta);
        return delta;
    }
    if (next.logprob) delta.logprobs.push_back(std::move(*next.logprob));
    delta.tokens.push_back(next.token);
    sequence.tokens.push_back(next.token);
    ++request.usage.completion_tokens;
    record_token_time(request, sequence);
    append_text(request, sequence, next.token, delta);
    return delta;
}

void Postprocessor::record_token_time(Request& request, Sequence& sequence) {
    const auto now = EngineClock::now();
    if (!request.first_token) {
        request.first_token = now;
        if (observer_) observer_->on_first_token(seconds_between(request.submitted, now));
    } else if (observer_ && sequence.generated() > 1) {
        observer_->on_inter_token(seconds_between(sequence.last_token_time, now));
    }
    sequence.last_token_time = now;
}

// The token's text (never part of a stop string), and whether the sequence ends with it.
void Postprocessor::append_text(const Request& request, Sequence& sequence, int32_t token, ChoiceDelta& delta) {
    const GenerationOptions& options = request.options;
    const bool end_of_generation = tokenizer_.is_end_of_generation(token);
    if (end_of_generation && !options.ignore_eos) {
        sequence.finish_reason = FinishReason::Stop;
    } else {
        const auto out = sequence.stop_matcher.push(sequence.detokenizer.push(token));
        delta.text += out.text;
        if (out.stopped) sequence.finish_reason = FinishReason::Stop;
    }
    // The grammar's sentence is complete and nothing may follow: the answer is whole.
    const bool grammar_complete = sequence.constraint && sequence.constraint->must_end();
    if (!sequence.finish_reason && grammar_complete) sequence.finish_reason = FinishReason::Stop;
    if (!sequence.finish_reason && (sequence.generated() >= options.max_tokens ||
                                    static_cast<int64_t>(sequence.tokens.size()) >= config_.context_length))
        sequence.finish_reason = FinishReason::Length;
    if (!sequence.finish_reason) return;
    if (*sequence.finish_reason == FinishReason::Length || end_of_generation || grammar_complete) {
        // Nothing can follow: release what the stop matcher and detokenizer held back.
        delta.text += sequence.stop_matcher.push(sequence.detokenizer.flush()).text;
        delta.text += sequence.stop_matcher.flush();
    }
    sequence.finished = true;
    delta.finish = sequence.finish_reason;
    kv_.release(sequence.id);
}

// The grammar allowed no token the draw could take (a grammar the vocabulary cannot continue, or its
// only continuations masked, e.g. end of generation under min_tokens): the choice ends where it is.
void Postprocessor::end_refused_by_grammar(Sequence& sequence, ChoiceDelta& delta) {
    delta.text += sequence.stop_matcher.push(sequence.detokenizer.flush()).text;
    delta.text += sequence.stop_matcher.flush();
    sequence.finish_reason = FinishReason::Stop;
    sequence.finished = true;
    delta.finish = sequence.finish_reason;
    kv_.release(sequence.id);
}

void Postprocessor::finish(Request& request, std::optional<std::string> error) {
    for (auto& sequence : request.sequences) kv_.release(sequence->id);
    RequestOutcome outcome = RequestOutcome::Error;
    if (!error) {
        const auto reason = request.sequences.front()->finish_reason;
        outcome = reason == FinishReason::Length ? RequestOutcome::Length : RequestOutcome::Stop;
    }
    report_finished(request, outcome);
    GenerationEvent event;
    event.done = true;
    event.error = std::move(error);
    event.usage = request.usage;
    request.stream->push(std::move(event));
}

void Postprocessor::report_finished(Request& request, RequestOutcome outcome) {
    if (!observer_) return;
    RequestTimings timings;
    timings.queue_seconds = request.ever_admitted ? seconds_between(request.submitted, request.first_scheduled) : 0;
    timings.first_token_seconds = request.first_token ? seconds_between(request.submitted, *request.first_token) : 0;
    timings.total_seconds = seconds_between(request.submitted, EngineClock::now());
    observer_->on_request_finished(outcome, request.usage, timings);
}

}  // namespace tempered
