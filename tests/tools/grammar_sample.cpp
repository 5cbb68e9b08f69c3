// tempered_grammar_sample: the bridge for the Python property tests (tests/e2e/test_grammar_jsonschema.py and
// tests/e2e/test_grammar_properties.py).
// Reads one JSON request per line on stdin, answers one JSON line each on stdout:
//   {"schema": S, "samples": n, "seed": k}  ->  {"ok": true, "samples": [complete strings from S's grammar]}
//   {"schema": S, "check": [strings]}       ->  {"ok": true, "accepted": [whether each is a complete match]}
//   a schema that does not compile          ->  {"ok": false, "keyword": ..., "pointer": ..., "message": ...}
// Samples are random byte walks: each step picks uniformly among the bytes the matcher accepts, stops at a
// complete state with some probability, and leans towards closing quotes and brackets as it grows.
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace {

using tempered::grammar::Grammar;
using tempered::grammar::Matcher;

std::optional<std::string> sample_once(const Grammar& grammar, std::mt19937& rng, size_t max_length) {
    Matcher matcher(grammar);
    std::string out;
    std::vector<uint8_t> candidates, closers;
    while (out.size() < max_length) {
        candidates.clear();
        closers.clear();
        for (unsigned byte = 0; byte < 256; ++byte) {
            const Matcher::Checkpoint before = matcher.checkpoint();
            if (!matcher.accept_byte(static_cast<uint8_t>(byte))) continue;
            matcher.rollback(before);
            candidates.push_back(static_cast<uint8_t>(byte));
            if (byte == '"' || byte == '}' || byte == ']') closers.push_back(static_cast<uint8_t>(byte));
        }
        if (matcher.is_complete() && (candidates.empty() || rng() % 4 == 0)) return out;
        if (candidates.empty()) return std::nullopt;
        const bool lean_to_close = !closers.empty() && rng() % max_length < out.size() * 2;
        const auto& pool = lean_to_close ? closers : candidates;
        const uint8_t byte = pool[rng() % pool.size()];
        matcher.accept_byte(byte);
        out.push_back(static_cast<char>(byte));
    }
    return std::nullopt;
}

nlohmann::json answer(const nlohmann::ordered_json& request) {
    auto grammar = tempered::grammar::compile_json_schema(request.at("schema"));
    if (!grammar) {
        return {{"ok", false},
                {"keyword", grammar.error().keyword},
                {"pointer", grammar.error().pointer},
                {"message", grammar.error().message}};
    }
    nlohmann::json out = {{"ok", true}};
    if (request.contains("check")) {
        std::vector<bool> accepted;
        for (const auto& text : request["check"]) {
            Matcher matcher(*grammar);
            accepted.push_back(matcher.accept_bytes(text.get<std::string>()) && matcher.is_complete());
        }
        out["accepted"] = accepted;
        return out;
    }
    std::mt19937 rng(request.value("seed", 0u));
    std::vector<std::string> samples;
    const size_t wanted = request.value("samples", 10u);
    for (size_t attempt = 0; samples.size() < wanted && attempt < wanted * 4; ++attempt) {
        if (auto sample = sample_once(*grammar, rng, 400)) samples.push_back(std::move(*sample));
    }
    out["samples"] = samples;
    return out;
}

}  // namespace

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.empty()) continue;
        auto request = nlohmann::ordered_json::parse(line, nullptr, false);
        if (request.is_discarded() || !request.contains("schema")) {
            std::cout << R"({"ok": false, "message": "bad request line"})" << std::endl;
            continue;
        }
        std::cout << answer(request).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    }
    return 0;
}
