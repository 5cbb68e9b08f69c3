#include "upstream/upstream_kind.h"

#include <array>
#include <utility>

namespace tempered::upstream {

namespace {

constexpr std::array<std::pair<UpstreamKind, const char*>, 5> kNames = {{{UpstreamKind::Tempered, "tempered"},
                                                                         {UpstreamKind::Vllm, "vllm"},
                                                                         {UpstreamKind::Sglang, "sglang"},
                                                                         {UpstreamKind::LlamaCpp, "llamacpp"},
                                                                         {UpstreamKind::OpenAi, "openai"}}};

}  // namespace

const char* upstream_kind_name(UpstreamKind kind) {
    for (const auto& [known, name] : kNames)
        if (known == kind) return name;
    return "openai";
}

Result<UpstreamKind> parse_upstream_kind(std::string_view name) {
    for (const auto& [kind, known] : kNames)
        if (name == known) return kind;
    return Error{"--upstream-kind must be auto, tempered, vllm, sglang, llamacpp or openai (got '" + std::string(name) +
                 "')"};
}

UpstreamCapabilities capabilities_of(UpstreamKind kind) {
    switch (kind) {
        case UpstreamKind::Tempered:
            return {.top_k = true,
                    .min_p = true,
                    .typical_p = true,
                    .repetition_penalty = "repetition_penalty",
                    .dry = true,
                    .token_ids = true,
                    .logprobs_by_id = true,
                    .prompt_ids = true,
                    .grammar = "structured_outputs"};
        case UpstreamKind::Vllm:
            return {.top_k = true,
                    .min_p = true,
                    .repetition_penalty = "repetition_penalty",
                    .token_ids = true,
                    .logprobs_by_id = true,
                    .prompt_ids = true,
                    .grammar = "structured_outputs"};
        case UpstreamKind::Sglang:
            return {.top_k = true,
                    .min_p = true,
                    .repetition_penalty = "repetition_penalty",
                    .token_ids = true,
                    .grammar = "ebnf"};
        case UpstreamKind::LlamaCpp:
            return {.top_k = true,
                    .min_p = true,
                    .typical_p = true,
                    .repetition_penalty = "repeat_penalty",
                    .dry = true,
                    .token_ids = true,
                    .llamacpp_native = true,
                    .prompt_ids = true,
                    .grammar = "grammar",
                    .lazy_grammar = true};
        case UpstreamKind::OpenAi: return {};
    }
    return {};
}

std::vector<std::string> unapplied_sampling(const GenerationOptions& options,
                                            const UpstreamCapabilities& capabilities) {
    std::vector<std::string> names;
    const SamplingParams& sampling = options.sampling;
    if (sampling.top_k != 0 && !capabilities.top_k) names.push_back("top_k");
    if (sampling.min_p != 0.0f && !capabilities.min_p) names.push_back("min_p");
    if (sampling.typical_p != 1.0f && !capabilities.typical_p) names.push_back("typical_p");
    if (options.penalties.repetition != 1.0f && !capabilities.repetition_penalty) names.push_back("repetition_penalty");
    if (options.dry.active() && !capabilities.dry) names.push_back("dry_multiplier");
    return names;
}

}  // namespace tempered::upstream
