#include "settings/degeneration_settings.h"

#include <cmath>
#include <limits>

#include "sampling/sampling_values.h"
#include "settings/degeneration_report.h"

namespace tempered {
namespace {

// Reads the errors' prefix and the settings being filled.
struct Reader {
    const std::string& where;
    DegenerationGuardSettings& out;

    Error error(const std::string& key, const std::string& problem) const {
        return Error{where + ": " + key + " " + problem};
    }

    Result<double> number(const nlohmann::json& value, const std::string& key) const {
        if (!value.is_number() || !std::isfinite(value.get<double>())) return error(key, "must be a number");
        return value.get<double>();
    }

    Result<int32_t> integer(const nlohmann::json& value, const std::string& key, int64_t min) const {
        if (!value.is_number_integer()) return error(key, "must be an integer");
        const int64_t n = value.get<int64_t>();
        if (n < min || n > std::numeric_limits<int32_t>::max())
            return error(key, "must be an integer >= " + std::to_string(min));
        return static_cast<int32_t>(n);
    }
};

Status read_sampling_value(const Reader& reader, const std::string& key, const nlohmann::json& value) {
    auto number = reader.number(value, key);
    if (!number) return number.error();
    if (auto problem = check_sampling_range(key, *number)) return Error{reader.where + ": fallback." + *problem};
    FallbackSampling& fallback = reader.out.guard.fallback;
    if (key == "temperature") fallback.temperature = static_cast<float>(*number);
    if (key == "top_p") fallback.top_p = static_cast<float>(*number);
    if (key == "min_p") fallback.min_p = static_cast<float>(*number);
    if (key == "top_k") {
        if (*number != std::floor(*number)) return reader.error("fallback.top_k", "must be an integer");
        fallback.top_k = std::max(0, static_cast<int32_t>(*number));  // -1 and 0: no top-k
    }
    return Ok{};
}

Status read_dry_value(const Reader& reader, const std::string& key, const nlohmann::json& value) {
    const std::string path = "fallback." + key;
    DryParams& dry = reader.out.guard.fallback.dry;
    if (key == "dry_sequence_breakers") {
        if (!value.is_array()) return reader.error(path, "must be an array of strings");
        reader.out.dry_sequence_breakers.clear();
        for (const auto& breaker : value) {
            if (!breaker.is_string()) return reader.error(path, "must be an array of strings");
            reader.out.dry_sequence_breakers.push_back(breaker.get<std::string>());
        }
        return Ok{};
    }
    if (key == "dry_allowed_length" || key == "dry_penalty_last_n") {
        auto n = reader.integer(value, path, key == "dry_allowed_length" ? 0 : -1);
        if (!n) return n.error();
        (key == "dry_allowed_length" ? dry.allowed_length : dry.penalty_last_n) = *n;
        return Ok{};
    }
    auto number = reader.number(value, path);
    if (!number) return number.error();
    if (key == "dry_multiplier" && *number < 0) return reader.error(path, "must be >= 0 (0: DRY off)");
    if (key == "dry_base" && *number < 1) return reader.error(path, "must be >= 1");
    (key == "dry_multiplier" ? dry.multiplier : dry.base) = static_cast<float>(*number);
    return Ok{};
}

Status read_fallback(const Reader& reader, const nlohmann::json& fallback) {
    if (!fallback.is_object()) return reader.error("fallback", "must be a JSON object");
    for (const auto& [key, value] : fallback.items()) {
        Status status = Ok{};
        if (key == "temperature" || key == "top_p" || key == "top_k" || key == "min_p")
            status = read_sampling_value(reader, key, value);
        else if (key == "dry_multiplier" || key == "dry_base" || key == "dry_allowed_length" ||
                 key == "dry_penalty_last_n" || key == "dry_sequence_breakers")
            status = read_dry_value(reader, key, value);
        else
            return reader.error("fallback." + key,
                                "is not a fallback setting (known: temperature, top_p, top_k, min_p, dry_multiplier, "
                                "dry_base, dry_allowed_length, dry_penalty_last_n, dry_sequence_breakers)");
        if (!status) return status.error();
    }
    return Ok{};
}

Status read_action(const Reader& reader, const nlohmann::json& value) {
    const auto action = value.is_string() ? degeneration_action_from_name(value.get<std::string>()) : std::nullopt;
    if (!action) return reader.error("action", "must be one of off, flag, stop, resample (got " + value.dump() + ")");
    reader.out.guard.action = *action;
    return Ok{};
}

Status read_object(const Reader& reader, const nlohmann::json& object) {
    RepetitionDetectionParams& detector = reader.out.guard.detector;
    for (const auto& [key, value] : object.items()) {
        Status status = Ok{};
        int32_t* size = key == "max_pattern_size"   ? &detector.max_pattern_size
                        : key == "min_pattern_size" ? &detector.min_pattern_size
                        : key == "min_count"        ? &detector.min_count
                        : key == "min_loop_tokens"  ? &detector.min_loop_tokens
                                                    : nullptr;
        if (size) {
            auto n = reader.integer(value, key, 0);
            if (!n) return n.error();
            *size = *n;
        } else if (key == "min_loop_share") {
            auto share = reader.number(value, key);
            if (!share) return share.error();
            detector.min_loop_share = static_cast<float>(*share);
        } else if (key == "shapes") {
            if (!value.is_boolean()) return reader.error(key, "must be true or false (got " + value.dump() + ")");
            detector.shapes = value.get<bool>();
        } else if (key == "action") {
            status = read_action(reader, value);
        } else if (key == "fallback") {
            status = read_fallback(reader, value);
        } else {
            return reader.error(key,
                                "is not a guard setting (known: action, max_pattern_size, min_pattern_size, "
                                "min_count, min_loop_tokens, min_loop_share, shapes, fallback)");
        }
        if (!status) return status.error();
    }
    auto valid = validate_repetition_detection(detector);
    if (!valid) return reader.error(valid.error().field, valid.error().rule);
    detector = *valid;
    return Ok{};
}

}  // namespace

Result<DegenerationGuardSettings> parse_degeneration_guard(const nlohmann::json& value, const std::string& where) {
    DegenerationGuardSettings settings;
    const Reader reader{where, settings};
    Status status = Ok{};
    if (value.is_string())
        status = read_action(reader, value);
    else if (value.is_object())
        status = read_object(reader, value);
    else
        return Error{where + ": expected an action name (off, flag, stop, resample) or a JSON object"};
    if (!status) return status.error();
    return settings;
}

Result<DegenerationGuardSettings> choose_degeneration_guard(const std::string& flag,
                                                            const std::optional<nlohmann::json>& config_value) {
    const std::string where = "--degeneration-guard";
    if (!flag.empty()) {
        // A bare word is an action name; anything else must be JSON.
        const bool json_text = flag.find_first_of("{[\"") != std::string::npos;
        nlohmann::json value = json_text ? nlohmann::json::parse(flag, nullptr, false) : nlohmann::json(flag);
        if (value.is_discarded()) return Error{where + ": not valid JSON: " + flag};
        return parse_degeneration_guard(value, where);
    }
    if (config_value) return parse_degeneration_guard(*config_value, "--config: degeneration_guard");
    return DegenerationGuardSettings{};
}

DegenerationGuard guard_for_request(const DegenerationGuard& server,
                                    const std::optional<RepetitionDetectionParams>& repetition_detection) {
    if (!repetition_detection) return server;
    DegenerationGuard guard = server;  // the fallback is kept, though stop never uses it
    guard.detector = *repetition_detection;
    guard.action = repetition_detection->enabled() ? DegenerationAction::Stop : DegenerationAction::Off;
    return guard;
}

void DegenerationGuardSettings::build_vocabulary_tables(const Tokenizer& tokenizer) {
    // The whole vocabulary is decoded only when a table needs it: the server's guard looks at shapes (a request's
    // own repetition_detection never does), or the fallback has breakers.
    const bool shapes = guard.detector.shapes && guard.active();
    if (!shapes && dry_sequence_breakers.empty()) {
        guard.fallback.dry.breakers = std::make_shared<const DryBreakers>();
        return;
    }
    std::vector<std::string> token_texts;
    token_texts.reserve(static_cast<size_t>(tokenizer.vocab_size()));
    for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) token_texts.push_back(tokenizer.decode({&id, 1}));
    if (shapes) guard.shapes = std::make_shared<const TokenShapes>(token_texts);
    if (dry_sequence_breakers.empty()) {
        guard.fallback.dry.breakers = std::make_shared<const DryBreakers>();
        return;
    }
    const DryTokenize tokenize = [&tokenizer](std::string_view text) { return tokenizer.encode(text, false, false); };
    guard.fallback.dry.breakers =
        std::make_shared<const DryBreakers>(make_dry_breakers(dry_sequence_breakers, token_texts, tokenize));
}

nlohmann::json DegenerationGuardSettings::describe() const {
    const RepetitionDetectionParams& detector = guard.detector;
    nlohmann::json out = {{"action", degeneration_action_name(guard.action)},
                          {"max_pattern_size", detector.max_pattern_size},
                          {"min_pattern_size", detector.min_pattern_size},
                          {"min_count", detector.min_count},
                          {"min_loop_tokens", detector.min_loop_tokens},
                          {"min_loop_share", float_for_json(detector.min_loop_share)},
                          {"shapes", detector.shapes}};
    const FallbackSampling& fallback = guard.fallback;
    nlohmann::json sampling = nlohmann::json::object();
    if (fallback.temperature) sampling["temperature"] = float_for_json(*fallback.temperature);
    if (fallback.top_p) sampling["top_p"] = float_for_json(*fallback.top_p);
    if (fallback.top_k) sampling["top_k"] = *fallback.top_k;
    if (fallback.min_p) sampling["min_p"] = float_for_json(*fallback.min_p);
    sampling["dry_multiplier"] = float_for_json(fallback.dry.multiplier);
    sampling["dry_base"] = float_for_json(fallback.dry.base);
    sampling["dry_allowed_length"] = fallback.dry.allowed_length;
    sampling["dry_penalty_last_n"] = fallback.dry.penalty_last_n;
    sampling["dry_sequence_breakers"] = dry_sequence_breakers;
    out["fallback"] = std::move(sampling);
    return out;
}

}  // namespace tempered
