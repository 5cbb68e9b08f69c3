#include "edge/access_control.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <fstream>
#include <sstream>
#include <unordered_set>

namespace tempered {
namespace {

// Not /health_generate: it runs a generation, which is work a keyless client must not be able to queue.
// /ready asks an upstream at most once a second (upstream_generator.h), so it is open too.
constexpr std::array<std::string_view, 8> kProbePaths = {
    "/health", "/ready", "/metrics", "/get_load", "/server_info", "/model_info", "/get_server_info", "/get_model_info"};

std::string_view trim(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
    return text;
}

std::vector<std::string_view> split_words(std::string_view line) {
    std::vector<std::string_view> words;
    while (!(line = trim(line)).empty()) {
        size_t end = 0;
        while (end < line.size() && !std::isspace(static_cast<unsigned char>(line[end]))) ++end;
        words.push_back(line.substr(0, end));
        line.remove_prefix(end);
    }
    return words;
}

// A name becomes a metrics label and a log field: short and plain.
bool valid_key_name(std::string_view name) {
    if (name.empty() || name.size() > ClientLabels::kMaxLabelBytes) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
    });
}

// A key travels in an HTTP header: visible ASCII only.
bool valid_secret(std::string_view secret) {
    return !secret.empty() && std::all_of(secret.begin(), secret.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

Result<std::string> read_file(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) return Error{"--api-key-file " + path + ": cannot be read"};
    std::ostringstream text;
    text << file.rdbuf();
    return text.str();
}

// Names the unnamed keys by their place and refuses a name or a secret given twice.
Status name_and_check(std::vector<ApiKey>& keys) {
    std::unordered_set<std::string> names;
    std::unordered_set<std::string> secrets;
    for (size_t i = 0; i < keys.size(); ++i) {
        if (keys[i].name.empty()) keys[i].name = "key" + std::to_string(i + 1);
        if (!names.insert(keys[i].name).second) return Error{"API key name '" + keys[i].name + "' is used twice"};
        if (!secrets.insert(keys[i].secret).second)
            return Error{"API key '" + keys[i].name + "' repeats an earlier key"};
    }
    return Ok{};
}

}  // namespace

Result<std::vector<ApiKey>> parse_api_key_file(std::string_view text) {
    std::vector<ApiKey> keys;
    size_t line_number = 0;
    while (!text.empty()) {
        const size_t end = std::min(text.find('\n'), text.size());
        const std::string_view line = trim(text.substr(0, end));
        text.remove_prefix(std::min(end + 1, text.size()));
        ++line_number;
        if (line.empty() || line.front() == '#') continue;
        const std::vector<std::string_view> words = split_words(line);
        const std::string where = "line " + std::to_string(line_number) + ": ";
        if (words.size() > 2)
            return Error{where + "expected KEY or NAME KEY, got " + std::to_string(words.size()) + " words"};
        const std::string_view name = words.size() == 2 ? words[0] : std::string_view();
        const std::string_view secret = words.back();
        if (words.size() == 2 && !valid_key_name(name))
            return Error{where + "a key name is 1 to 64 letters, digits, '_', '-' or '.'"};
        if (!valid_secret(secret)) return Error{where + "a key is printable ASCII without spaces"};
        keys.push_back({std::string(name), std::string(secret)});
    }
    return keys;
}

Result<std::vector<ApiKey>> load_api_keys(const ApiKeySources& sources) {
    std::vector<ApiKey> keys;
    for (const std::string& secret : sources.flag_keys) {
        if (!valid_secret(secret)) return Error{"--api-key: a key is printable ASCII without spaces, not empty"};
        keys.push_back({"", secret});
    }
    if (!sources.key_file.empty()) {
        auto text = read_file(sources.key_file);
        if (!text) return text.error();
        auto from_file = parse_api_key_file(*text);
        if (!from_file) return Error{"--api-key-file " + sources.key_file + ": " + from_file.error().message};
        if (from_file->empty()) return Error{"--api-key-file " + sources.key_file + ": holds no key"};
        keys.insert(keys.end(), from_file->begin(), from_file->end());
    }
    if (!sources.environment_key.empty()) {
        if (!valid_secret(sources.environment_key))
            return Error{"TEMPERED_API_KEY: a key is printable ASCII without spaces"};
        keys.push_back({"", sources.environment_key});
    }
    if (auto named = name_and_check(keys); !named) return named.error();
    return keys;
}

bool secrets_equal(std::string_view a, std::string_view b) {
    const size_t longer = std::max(a.size(), b.size());
    // volatile: the compiler may not stop the walk once the answer is known.
    volatile unsigned char difference = a.size() == b.size() ? 0 : 1;
    for (size_t i = 0; i < longer; ++i) {
        const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
        const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
        difference = difference | static_cast<unsigned char>(x ^ y);
    }
    return difference == 0;
}

bool is_probe_path(std::string_view path_pattern) {
    return std::find(kProbePaths.begin(), kProbePaths.end(), path_pattern) != kProbePaths.end();
}

AccessControl::AccessControl(AccessSettings settings)
    : settings_(std::move(settings)), labels_(settings_.max_client_labels) {}

bool AccessControl::requires_key(std::string_view path_pattern) const {
    if (settings_.keys.empty()) return false;
    return settings_.protect_all || !is_probe_path(path_pattern);
}

namespace {

// `Authorization: Bearer KEY`, else `x-api-key: KEY` (Anthropic's header); "" when neither holds one.
std::string presented_secret(const http::HttpRequest& request) {
    const std::string authorization = request.header("Authorization");
    const std::string_view value = trim(authorization);
    constexpr std::string_view kScheme = "bearer ";
    if (value.size() <= kScheme.size()) return std::string(trim(request.header("x-api-key")));
    for (size_t i = 0; i < kScheme.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(value[i])) != kScheme[i]) return "";
    return std::string(trim(value.substr(kScheme.size())));
}

}  // namespace

const ApiKey* AccessControl::presented_key(const http::HttpRequest& request) const {
    const std::string secret = presented_secret(request);
    if (secret.empty()) return nullptr;
    const std::string_view presented = secret;
    const ApiKey* match = nullptr;
    for (const ApiKey& key : settings_.keys)
        if (secrets_equal(presented, key.secret) && match == nullptr) match = &key;
    return match;
}

std::optional<api::ApiError> AccessControl::check(const http::HttpRequest& request) const {
    if (presented_key(request) != nullptr) return std::nullopt;
    api::ApiError error;
    error.http_status = 401;
    error.code = "invalid_api_key";
    error.message = request.has_header("Authorization") || request.has_header("x-api-key")
                        ? "Incorrect API key provided."
                        : "You didn't provide an API key: send it as the header 'Authorization: Bearer KEY'.";
    return error;
}

std::optional<std::string> AccessControl::client_of(const http::HttpRequest& request) const {
    if (!settings_.keys.empty()) {
        const ApiKey* key = presented_key(request);
        return key ? key->name : std::string(ClientLabels::kUnknown);
    }
    if (settings_.client_label_header.empty()) return std::nullopt;
    return labels_.label_for(request.header(settings_.client_label_header));
}

std::string AccessControl::describe() const {
    if (settings_.keys.empty()) {
        if (settings_.client_label_header.empty()) return "no API keys: every endpoint is open";
        return "no API keys: every endpoint is open; clients named by their " + settings_.client_label_header +
               " header (up to " + std::to_string(settings_.max_client_labels) + " labels, then other)";
    }
    std::string names;
    for (const ApiKey& key : settings_.keys) names += (names.empty() ? "" : ", ") + key.name;
    const size_t count = settings_.keys.size();
    return std::to_string(count) + (count == 1 ? " API key" : " API keys") + " loaded (names: " + names + "); " +
           (settings_.protect_all ? "every endpoint needs one" : "the probes (/health, /metrics, ...) stay open");
}

http::HttpResponse unauthorized_response(const api::ApiError& error, api::ErrorEnvelope envelope) {
    http::HttpResponse response = api::to_http_response(error, envelope);
    response.headers.emplace("WWW-Authenticate", "Bearer");
    return response;
}

}  // namespace tempered
