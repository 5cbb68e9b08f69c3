#include "engine/postprocess.h"

#include <algorithm>

#include "engine/kv_transfer.h"

namespace tempered {

namespace {
double seconds_between(EngineClock::time_point from, EngineClock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

// What the output processor let out, added to the choice's delta.
void take_output(OutputDelta out, ChoiceDelta& delta) {
    delta.reasoning_text += out.reasoning;
    delta.text += out.content;
    for (toolcalls::ParsedToolCall& call : out.calls) delta.calls.push_back(std::move(call));
    delta.unparsed_calls += out.unparsed_calls;
    if (out.stopped) delta.stop_string = std::move(out.stop_string);
}

// The output has ended: what the detokenizer and the output processor held back, on its side.
void flush_held_text(Sequence& sequence, ChoiceDelta& delta) {
    OutputDelta out = sequence.output.finish(sequence.detokenizer.flush());
    take_output(std::move(out), delta);
}

void cancel_kv_transfer(Request& request) {
    if (request.options.kv_import) request.options.kv_import->cancel();
    if (request.options.kv_export) request.options.kv_export->cancel();
}
}  // namespace

Postprocessor::Postprocessor(const Tokenizer& tokenizer, const ModelConfig& config, KvBlockPool& kv,
                             EngineObserver* observer, SequenceIds& sequence_ids, std::function<void()> transfer_ready)
    : tokenizer_(tokenizer),
      config_(config),
      kv_(kv),
      observer_(observer),
      sequence_ids_(sequence_ids),
      closing_(tokenizer),
      transfer_ready_(std::move(transfer_ready)) {
    for (int32_t token = 0; token < std::min<int64_t>(tokenizer.vocab_size(), config.vocab_size); ++token)
        if (tokenizer.is_end_of_generation(token)) end_of_generation_tokens_.push_back(token);
}

Postprocessor::Applied Postprocessor::apply(const StepPlan& plan, const Status& forward, const float* logits) {
    touched_.clear();
    finished_.clear();
    awaiting_export_.clear();
    const auto vocab = static_cast<size_t>(config_.vocab_size);
    size_t logits_row = 0;
    for (const ScheduledChunk& chunk : plan.chunks) {
        Request& request = *chunk.request;
        if (std::find(touched_.begin(), touched_.end(), &request) == touched_.end()) touched_.push_back(&request);
        if (!forward) continue;
        Sequence& sequence = *chunk.sequence;
        sequence.computed += chunk.count - chunk.drafts;
        kv_.register_computed(sequence.id, sequence.tokens, sequence.computed);
        if (sequence.computed != static_cast<int64_t>(sequence.tokens.size())) continue;  // mid-prefill chunk
        if (request.options.kv_export && !request.kv_delivered) deliver_prompt_kv(request, sequence);
        emit_next_tokens(request, sequence, logits + logits_row++ * vocab);
        if (chunk.drafts > 0) logits_row = verify_drafts(request, sequence, chunk.drafts, logits, logits_row);
    }
    for (Request* request : touched_) {
        if (forward && !request->all_finished()) continue;
        if (forward && request->kv_delivered) {  // prefill side: done once the decode server has the KV
            awaiting_export_.push_back(request);
            continue;
        }
        std::optional<std::string> error;
        if (!forward) error = "model forward failed: " + forward.error().message;
        finish(*request, std::move(error));
        finished_.push_back(request);
    }
    return {finished_, awaiting_export_};
}

// The drafts after the token just drawn, in order: while the token drawn at a position equals the draft
// that sat there, the draft's keys and values are right, so it counts as computed and its logits row draws
// the next token, exactly as decoding one token per step would (a multi-position step's logits are those
// of single steps, bit for bit: model_tiny_llama_test's TokenByTokenDecodeEqualsPrefill). The first
// mismatch ends it: the positions after are overwritten by the next step. Returns the next logits row.
size_t Postprocessor::verify_drafts(Request& request, Sequence& sequence, int64_t drafts, const float* logits,
                                    size_t row) {
    const auto vocab = static_cast<size_t>(config_.vocab_size);
    int64_t accepted = 0;
    for (int64_t d = 0; d < drafts; ++d, ++row) {
        const bool right =
            !sequence.finished && accepted == d && sequence.tokens.back() == sequence.drafts[static_cast<size_t>(d)];
        if (!right) continue;  // its row is skipped, as every later one
        ++accepted;
        ++sequence.computed;
        kv_.register_computed(sequence.id, sequence.tokens, sequence.computed);
        emit_next_tokens(request, sequence, logits + row * vocab);
    }
    if (observer_) observer_->on_speculation(drafts, accepted);
    sequence.acceptance.observe(drafts, accepted);
    sequence.drafts.clear();
    return row;
}

// Prefill side: the prompt's KV leaves the moment it exists, before the first token is even drawn; only
// the blocks the decode server lacks, when it has already said which those are.
void Postprocessor::deliver_prompt_kv(Request& request, const Sequence& sequence) {
    KvExport& out = *request.options.kv_export;
    const int64_t from = std::min(out.claimed_cached_positions(), sequence.prompt_length);
    out.deliver(std::vector<int32_t>(sequence.tokens.begin(), sequence.tokens.begin() + sequence.prompt_length),
                stage_kv(kv_, sequence.id, from, sequence.prompt_length), transfer_ready_);
    request.kv_delivered = true;
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
                                                request.options, tokenizer_);
        // Shares the prompt's full blocks; without room it recomputes later instead.
        child->computed = kv_.fork(first.id, child->id, first.computed) ? first.computed : 0;
        request.sequences.push_back(std::move(child));
    }
    request.forked = true;
}

ChoiceDelta Postprocessor::sample(Request& request, Sequence& sequence, const float* logits) {
    const GenerationOptions& options = request.options;
    const std::span<const float> row(logits, static_cast<size_t>(config_.vocab_size));
    ChoiceDelta delta;
    delta.index = sequence.choice;
    if (auto forced = forced_reasoning_token(options, sequence, row)) {
        take_token(request, sequence, std::move(*forced), /*forced=*/true, delta);
        return delta;
    }
    const std::span<const int32_t> tokens(sequence.tokens);
    const auto prompt_length = static_cast<size_t>(sequence.prompt_length);
    const bool end_masked = options.ignore_eos || sequence.generated() < options.min_tokens ||
                            (sequence.reasoning && sequence.reasoning->masks_end_of_generation());
    const TokenHistory history{
        tokens.first(prompt_length), tokens.subspan(prompt_length),
        end_masked ? std::span<const int32_t>(end_of_generation_tokens_) : std::span<const int32_t>()};
    // The grammar shapes the answer, not the thinking: it starts at the first content token.
    const bool grammar_applies =
        !sequence.reasoning || !sequence.constraint || sequence.reasoning->grammar_applies(sequence.constraint->lazy());
    grammar::ConstraintState* constraint = sequence.constraint && grammar_applies ? &*sequence.constraint : nullptr;
    // The request's sampling, or the guard's fallback once it resampled this choice.
    const NextTokenParams params{sequence_sampling(options, sequence), options.penalties, options.top_logprobs,
                                 sequence_dry(options, sequence)};
    // The tokens this choice may still take: its max_tokens, and the context.
    const int64_t left = std::min(options.max_tokens - sequence.generated(),
                                  config_.context_length - static_cast<int64_t>(sequence.tokens.size()));
    if (constraint) {
        if (const auto closing = closing_.before_draw(*constraint, left)) {
            take_closing_token(request, sequence, *closing, row, delta);
            return delta;
        }
    }
    ConstrainedToken drawn =
        next_constrained_token(row, params, history, constraint, sequence.rng, workspace_, constrained_workspace_);
    if (observer_ && drawn.mask_seconds) observer_->on_grammar_mask(*drawn.mask_seconds);
    if (constraint) {
        if (const auto closing = closing_.after_draw(*constraint, drawn.sampled.token, left)) {
            if (*closing == GrammarClosing::kEndHere) {
                sequence.closed_early = true;
                end_where_it_is(sequence, delta, FinishReason::Length);
            } else {
                take_closing_token(request, sequence, *closing, row, delta);
            }
            return delta;
        }
    }
    if (constraint && !constraint->accept(drawn.sampled.token)) {
        end_refused_by_grammar(sequence, delta);
        return delta;
    }
    take_token(request, sequence, std::move(drawn.sampled), /*forced=*/false, delta);
    return delta;
}

// The reasoning's forced end, when due, instead of a draw; its logprob is the model's own for that token
// (so a choice's logprobs stay one per token), and it advances neither the rng nor the grammar.
std::optional<SampledToken> Postprocessor::forced_reasoning_token(const GenerationOptions& options, Sequence& sequence,
                                                                  std::span<const float> logits) {
    if (!sequence.reasoning) return std::nullopt;
    const std::optional<int32_t> token = sequence.reasoning->forced_token(sequence.generated(), options.max_tokens);
    if (!token) return std::nullopt;
    SampledToken forced{*token, std::nullopt};
    if (options.top_logprobs >= 0) forced.logprob = token_logprob(logits, *token, options.top_logprobs);
    return forced;
}

void Postprocessor::take_closing_token(Request& request, Sequence& sequence, int32_t token,
                                       std::span<const float> logits, ChoiceDelta& delta) {
    SampledToken closing{token, std::nullopt};
    if (request.options.top_logprobs >= 0) closing.logprob = token_logprob(logits, token, request.options.top_logprobs);
    if (!sequence.constraint->accept(token)) {  // cannot happen: the way is the grammar's own
        end_refused_by_grammar(sequence, delta);
        return;
    }
    sequence.closed_early = true;
    take_token(request, sequence, std::move(closing), /*forced=*/true, delta);
}

void Postprocessor::take_token(Request& request, Sequence& sequence, SampledToken next, bool forced,
                               ChoiceDelta& delta) {
    if (next.logprob) delta.logprobs.push_back(std::move(*next.logprob));
    delta.tokens.push_back(next.token);
    sequence.tokens.push_back(next.token);
    if (sequence.drafter) sequence.drafter->append(next.token);
    ++request.usage.completion_tokens;
    record_token_time(request, sequence);
    append_text(request, sequence, next.token, forced, delta);
    if (guard_generated_token(request.options, sequence, next.token, delta, observer_))
        end_where_it_is(sequence, delta, FinishReason::Repetition);
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
void Postprocessor::append_text(const Request& request, Sequence& sequence, int32_t token, bool forced,
                                ChoiceDelta& delta) {
    const GenerationOptions& options = request.options;
    const bool end_of_generation = tokenizer_.is_end_of_generation(token);
    if (end_of_generation && !options.ignore_eos) {
        sequence.finish_reason = FinishReason::Stop;
    } else {
        // Reasoning goes to the delta's reasoning_text (stop strings do not apply there, so a stop string the
        // model thinks about cannot cut the answer off before it starts); the content, stop strings matched.
        const std::string text = sequence.detokenizer.push(token);
        OutputDelta out = sequence.output.push({text, token, forced});
        if (out.stopped) sequence.finish_reason = FinishReason::Stop;
        take_output(std::move(out), delta);
    }
    // The grammar's sentence is complete and nothing may follow: the answer is whole.
    const bool grammar_complete = sequence.constraint && sequence.constraint->must_end();
    // Closed early to fit the limit, the sentence is whole but the answer was cut: "length".
    if (!sequence.finish_reason && grammar_complete)
        sequence.finish_reason = sequence.closed_early ? FinishReason::Length : FinishReason::Stop;
    if (!sequence.finish_reason && (sequence.generated() >= options.max_tokens ||
                                    static_cast<int64_t>(sequence.tokens.size()) >= config_.context_length))
        sequence.finish_reason = FinishReason::Length;
    if (!sequence.finish_reason) return;
    if (*sequence.finish_reason == FinishReason::Length || end_of_generation || grammar_complete) {
        // Nothing can follow: release what the stop matcher and detokenizer held back.
        flush_held_text(sequence, delta);
    }
    if (sequence.reasoning) delta.reasoning = sequence.reasoning->report();
    sequence.finished = true;
    delta.finish = sequence.finish_reason;
    delta.closed_early = sequence.closed_early;
    kv_.release(sequence.id);
}

// The grammar allowed no token the draw could take (a grammar the vocabulary cannot continue, or its
// only continuations masked, e.g. end of generation under min_tokens): the choice ends where it is.
void Postprocessor::end_refused_by_grammar(Sequence& sequence, ChoiceDelta& delta) {
    end_where_it_is(sequence, delta, FinishReason::Stop);
}

// Nothing more will be generated: what the detokenizer and the stop matcher held back is released.
void Postprocessor::end_where_it_is(Sequence& sequence, ChoiceDelta& delta, FinishReason reason) {
    flush_held_text(sequence, delta);
    if (sequence.reasoning) delta.reasoning = sequence.reasoning->report();
    sequence.finish_reason = reason;
    sequence.finished = true;
    delta.finish = sequence.finish_reason;
    delta.closed_early = sequence.closed_early;
    kv_.release(sequence.id);
}

void Postprocessor::abandon(Request& request) {
    cancel_kv_transfer(request);
    report_finished(request, RequestOutcome::Abort);
}

void Postprocessor::finish(Request& request, std::optional<std::string> error) {
    for (auto& sequence : request.sequences) kv_.release(sequence->id);
    cancel_kv_transfer(request);
    report_finished(request,
                    error ? RequestOutcome::Error : finished_outcome(request.sequences.front()->finish_reason));
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
