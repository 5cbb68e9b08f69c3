#include "api/completion_request.h"

#include <limits>

namespace tempered::api {
namespace {

bool is_token_id(const Json& value) {
    return value.is_number_integer() && (value.is_number_unsigned() || value.get<int64_t>() >= 0) &&
           value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
}

FieldError parse_token_ids(const Json& array, const std::string& param, std::vector<int32_t>& out) {
    if (array.empty()) {
        return invalid_request("Invalid '" + param + "': empty array of token ids.", param, "empty_array");
    }
    out.reserve(array.size());
    for (size_t i = 0; i < array.size(); ++i) {
        const Json& id = array[i];
        if (!is_token_id(id)) return wrong_type(param_path(param, i), "a token id (a non-negative integer)", id);
        out.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    return std::nullopt;
}

FieldError parse_prompt(const Json* field, std::vector<PromptInput>& out, bool& is_batch) {
    if (field == nullptr || field->is_null()) {
        return invalid_request("Missing required parameter: 'prompt'.", "prompt", "missing_required_parameter");
    }
    if (field->is_string()) {
        out.emplace_back(field->get<std::string>());
        return std::nullopt;
    }
    const char* expected = "a string, an array of strings, an array of token ids or an array of such arrays";
    if (!field->is_array()) return wrong_type("prompt", expected, *field);
    if (field->empty()) return invalid_request("Invalid 'prompt': empty array.", "prompt", "empty_array");
    const Json& first = (*field)[0];
    if (first.is_number()) {  // one prompt of token ids
        std::vector<int32_t> ids;
        if (auto e = parse_token_ids(*field, "prompt", ids)) return e;
        out.emplace_back(std::move(ids));
        return std::nullopt;
    }
    is_batch = true;
    for (size_t i = 0; i < field->size(); ++i) {
        const Json& item = (*field)[i];
        const std::string param = param_path("prompt", i);
        if (item.is_string()) {
            out.emplace_back(item.get<std::string>());
        } else if (item.is_array()) {
            std::vector<int32_t> ids;
            if (auto e = parse_token_ids(item, param, ids)) return e;
            out.emplace_back(std::move(ids));
        } else {
            return wrong_type(param, "a string or an array of token ids", item);
        }
    }
    return std::nullopt;
}

}  // namespace

ApiResult<CompletionRequest> parse_completion_request(std::string_view body) {
    ApiResult<Json> parsed = parse_json_object(body);
    if (!parsed) return parsed.error();
    const Json& json = *parsed;
    CompletionRequest request;
    if (auto e = parse_generation_fields(json, /*max_tokens_min=*/0, request.generation)) return *e;
    if (auto e = parse_prompt(find_field(json, "prompt"), request.prompts, request.prompt_is_batch)) return *e;

    RequestedValue<int64_t> logprobs;
    if (auto e = read_integer(find_field(json, "logprobs"), "logprobs", 0, kMaxCompletionLogprobs, logprobs)) {
        return *e;
    }
    if (logprobs.given()) request.logprobs = static_cast<int>(*logprobs.value);

    RequestedValue<bool> echo;
    if (auto e = read_bool(find_field(json, "echo"), "echo", echo)) return *e;
    request.echo = echo.value_or(false);

    RequestedValue<bool> return_token_ids;
    if (auto e = read_bool(find_field(json, "return_token_ids"), "return_token_ids", return_token_ids)) return *e;
    request.return_token_ids = return_token_ids.value_or(false);
    RequestedValue<bool> as_ids;
    if (auto e = read_bool(find_field(json, "return_tokens_as_token_ids"), "return_tokens_as_token_ids", as_ids))
        return *e;
    request.return_tokens_as_token_ids = as_ids.value_or(false);
    return request;
}

FieldError validate_completion_request(const CompletionRequest& request, const ModelLimits& limits) {
    for (size_t p = 0; p < request.prompts.size(); ++p) {
        const auto* ids = std::get_if<std::vector<int32_t>>(&request.prompts[p]);
        if (ids == nullptr) continue;
        for (size_t i = 0; i < ids->size(); ++i) {
            if ((*ids)[i] >= limits.vocab_size) {
                const std::string param =
                    request.prompt_is_batch ? param_path(param_path("prompt", p), i) : param_path("prompt", i);
                return invalid_request("Invalid '" + param + "': token id " + std::to_string((*ids)[i]) +
                                           " is out of range; the vocabulary has " + std::to_string(limits.vocab_size) +
                                           " tokens.",
                                       param, "invalid_value");
            }
        }
    }
    return validate_generation_fields(request.generation, limits);
}

}  // namespace tempered::api
