#include "api/generation_request.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <type_traits>

namespace tempered::api {
namespace {

Range range_of(const ParamRange& range) { return {range.min, range.max, range.min_exclusive, range.max_exclusive}; }

int64_t integer_bound(double bound) {
    if (bound == -std::numeric_limits<double>::infinity()) return std::numeric_limits<int64_t>::min();
    if (bound == std::numeric_limits<double>::infinity()) return std::numeric_limits<int64_t>::max();
    return static_cast<int64_t>(bound);
}

// As llama-server: only a JSON array of strings, and not an empty one (it would mean "no breakers", which
// llama-server does not let a request ask for either).
FieldError read_sequence_breakers(const Json* field, const std::string& name,
                                  RequestedValue<std::vector<std::string>>& out) {
    if (field == nullptr) return std::nullopt;
    if (field->is_null()) {
        out = RequestedValue<std::vector<std::string>>::null();
        return std::nullopt;
    }
    if (!field->is_array()) return wrong_type(name, "a non-empty array of strings", *field);
    if (field->empty() || field->size() > kMaxDrySequenceBreakers) {
        return invalid_request("Invalid '" + name + "': expected 1 to " + std::to_string(kMaxDrySequenceBreakers) +
                                   " strings, but got " + std::to_string(field->size()) + ".",
                               name, "invalid_value");
    }
    std::vector<std::string> breakers;
    for (size_t i = 0; i < field->size(); ++i) {
        const Json& item = (*field)[i];
        if (!item.is_string()) return wrong_type(param_path(name, i), "a string", item);
        if (item.get_ref<const std::string&>().size() > kMaxDrySequenceBreakerBytes) {
            return invalid_request("Invalid '" + param_path(name, i) + "': a sequence breaker may have at most " +
                                       std::to_string(kMaxDrySequenceBreakerBytes) + " bytes.",
                                   param_path(name, i), "invalid_value");
        }
        breakers.push_back(item.get<std::string>());
    }
    out = RequestedValue<std::vector<std::string>>::of(std::move(breakers));
    return std::nullopt;
}

// One sampling parameter's field of the body, read and checked by its row of the table.
template <class Param, class Field>
FieldError read_sampling_field(const Json& body, const Param& param, Field& out) {
    const std::string name(param.spec.name);
    const Json* field = find_field(body, name);
    using Value = typename Param::Value;
    if constexpr (std::is_same_v<Value, double>) {
        return read_number(field, name, range_of(param.spec.range), out);
    } else if constexpr (std::is_same_v<Value, int64_t>) {
        return read_integer(field, name, integer_bound(param.spec.range.min), integer_bound(param.spec.range.max), out);
    } else {
        return read_sequence_breakers(field, name, out);
    }
}

FieldError parse_sampling(const Json& body, SamplingRequest& out) {
    FieldError error;
    for_each_sampling_param([&](const auto& param) {
        if (!error) error = read_sampling_field(body, param, param.field(out));
    });
    return error;
}

FieldError parse_stop(const Json* field, std::vector<std::string>& out) {
    if (field == nullptr || field->is_null()) return std::nullopt;
    if (field->is_string()) {
        if (!field->get_ref<const std::string&>().empty()) out.push_back(field->get<std::string>());
        return std::nullopt;
    }
    if (!field->is_array()) return wrong_type("stop", "a string or an array of strings", *field);
    if (field->size() > kMaxStopSequences) {
        return invalid_request("Invalid 'stop': expected at most " + std::to_string(kMaxStopSequences) +
                                   " sequences, but got " + std::to_string(field->size()) + ".",
                               "stop", "invalid_value");
    }
    for (size_t i = 0; i < field->size(); ++i) {
        const Json& item = (*field)[i];
        if (!item.is_string()) return wrong_type(param_path("stop", i), "a string", item);
        if (!item.get_ref<const std::string&>().empty()) out.push_back(item.get<std::string>());
    }
    return std::nullopt;
}

FieldError parse_stream_options(const Json& body, bool stream, StreamOptions& out) {
    const Json* field = find_field(body, "stream_options");
    if (field == nullptr || field->is_null()) return std::nullopt;
    if (!field->is_object()) return wrong_type("stream_options", "an object", *field);
    if (!stream) {
        return invalid_request("The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                               "stream_options", "invalid_value");
    }
    RequestedValue<bool> include_usage;
    if (auto e = read_bool(find_field(*field, "include_usage"), "stream_options.include_usage", include_usage)) {
        return e;
    }
    out.include_usage = include_usage.value_or(false);
    return std::nullopt;
}

FieldError parse_logit_bias(const Json* field, std::vector<std::pair<int64_t, double>>& out) {
    if (field == nullptr || field->is_null()) return std::nullopt;
    if (!field->is_object()) return wrong_type("logit_bias", "an object", *field);
    for (const auto& [key, value] : field->items()) {
        int64_t token = -1;
        const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), token);
        if (error != std::errc() || end != key.data() + key.size() || token < 0) {
            return invalid_request("Invalid key in 'logit_bias': '" + key +
                                       "' is not a token id (a non-negative "
                                       "integer as a string).",
                                   "logit_bias", "invalid_value");
        }
        RequestedValue<double> bias;
        if (auto e = read_number(&value, "logit_bias." + key, {-100.0, 100.0}, bias)) return e;
        if (!bias.given()) return wrong_type("logit_bias." + key, "a number", value);
        out.emplace_back(token, *bias.value);
    }
    std::sort(out.begin(), out.end());
    return std::nullopt;
}

}  // namespace

ApiResult<Json> parse_json_object(std::string_view body) {
    Json json;
    try {
        json = Json::parse(body);
    } catch (const Json::out_of_range&) {
        return number_overflow_error(body);   // valid JSON, but a number no double holds: name its field
    } catch (const Json::exception& error) {  // parse_error, and anything else the parser throws
        return invalid_request(std::string("We could not parse the JSON body of your request: ") + error.what(), "",
                               "invalid_json");
    }
    if (!json.is_object()) {
        return invalid_request("The request body must be a JSON object, but got " + json_type_name(json) + ".", "",
                               "invalid_json");
    }
    return json;
}

FieldError parse_generation_fields(const Json& body, int64_t max_tokens_min, GenerationRequest& out) {
    RequestedValue<std::string> model;
    if (auto e = read_string(find_field(body, "model"), "model", model)) return e;
    out.model = model.value_or("");

    if (auto e = parse_sampling(body, out.sampling)) return e;

    const int64_t unbounded = std::numeric_limits<int64_t>::max();
    // OpenAI deprecated max_tokens for chat in favour of max_completion_tokens; either works, the
    // newer one wins when both are given.
    RequestedValue<int64_t> max_completion_tokens;
    if (auto e = read_integer(find_field(body, "max_completion_tokens"), "max_completion_tokens", max_tokens_min,
                              unbounded, max_completion_tokens)) {
        return e;
    }
    if (auto e =
            read_integer(find_field(body, "max_tokens"), "max_tokens", max_tokens_min, unbounded, out.max_tokens)) {
        return e;
    }
    const bool completion_null = max_completion_tokens.presence == Presence::Null;
    if (max_completion_tokens.given() || (completion_null && !out.max_tokens.given())) {
        out.max_tokens = max_completion_tokens;
        out.max_tokens_param = "max_completion_tokens";
    }
    if (auto e = read_integer(find_field(body, "min_tokens"), "min_tokens", 0, unbounded, out.min_tokens)) return e;
    if (out.min_tokens.given() && out.max_tokens.given() && *out.min_tokens.value > *out.max_tokens.value) {
        return invalid_request(
            "Invalid 'min_tokens': it must not exceed max_tokens (" + std::to_string(*out.max_tokens.value) + ").",
            "min_tokens", "invalid_value");
    }

    RequestedValue<int64_t> n;
    if (auto e = read_integer(find_field(body, "n"), "n", 1, kMaxChoices, n)) return e;
    out.n = static_cast<int>(n.value_or(1));

    if (auto e = parse_stop(find_field(body, "stop"), out.stop)) return e;

    RequestedValue<bool> stream;
    if (auto e = read_bool(find_field(body, "stream"), "stream", stream)) return e;
    out.stream = stream.value_or(false);
    if (auto e = parse_stream_options(body, out.stream, out.stream_options)) return e;

    if (auto e = parse_logit_bias(find_field(body, "logit_bias"), out.logit_bias)) return e;

    RequestedValue<std::string> user;
    if (auto e = read_string(find_field(body, "user"), "user", user)) return e;
    out.user = user.value_or("");

    RequestedValue<bool> ignore_eos;
    if (auto e = read_bool(find_field(body, "ignore_eos"), "ignore_eos", ignore_eos)) return e;
    out.ignore_eos = ignore_eos.value_or(false);
    RequestedValue<bool> speculative;
    if (auto e = read_bool(find_field(body, "speculative_decoding"), "speculative_decoding", speculative)) return e;
    out.speculative_decoding = speculative.value_or(true);
    if (auto e = parse_repetition_detection(find_field(body, "repetition_detection"), out.repetition_detection)) {
        return e;
    }
    if (auto e = parse_bootstrap(body, out.bootstrap)) return e;
    if (auto e = parse_response_format(find_field(body, "response_format"), out.response_format)) return e;
    return parse_structured_outputs(find_field(body, "structured_outputs"), out.response_format);
}

SamplingValues to_sampling_values(const SamplingRequest& request) {
    SamplingValues values;
    for_each_sampling_param([&](const auto& param) {
        auto& value = param.field(values);
        value = param.field(request).value;
        if constexpr (std::is_arithmetic_v<typename std::decay_t<decltype(param)>::Value>) {
            if (param.spec.negative_means_zero && value && *value < 0) value = 0;
        }
    });
    return values;
}

FieldError validate_generation_fields(const GenerationRequest& request, const ModelLimits& limits) {
    for (const auto& [token, bias] : request.logit_bias) {
        if (token >= limits.vocab_size) {
            return invalid_request("Invalid key in 'logit_bias': token id " + std::to_string(token) +
                                       " is out of range; the vocabulary has " + std::to_string(limits.vocab_size) +
                                       " tokens.",
                                   "logit_bias", "invalid_value");
        }
    }
    return std::nullopt;
}

}  // namespace tempered::api
