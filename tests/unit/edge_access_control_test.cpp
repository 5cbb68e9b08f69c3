// API keys (sources, key file, constant-time equality), which paths need one, the 401, and client labels.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <thread>

#include "edge/access_control.h"
#include "edge/client_labels.h"

namespace tempered {
namespace {
namespace edge_access_control_test {

http::HttpRequest with_authorization(const std::string& value) {
    http::HttpRequest request;
    request.headers.emplace("Authorization", value);
    return request;
}

AccessSettings settings(std::vector<ApiKey> keys, bool protect_all = false, std::string header = "",
                        size_t max_labels = 32) {
    AccessSettings made;
    made.keys = std::move(keys);
    made.protect_all = protect_all;
    made.client_label_header = std::move(header);
    made.max_client_labels = max_labels;
    return made;
}

std::string temp_file(const std::string& text) {
    char path[] = "/tmp/tempered-keys-XXXXXX";
    const int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    close(fd);
    std::ofstream(path) << text;
    return path;
}

TEST(ApiKeyFile, ReadsKeysAndNamedKeysSkippingCommentsAndBlankLines) {
    auto keys = parse_api_key_file("# operators\n\nalpha sk-aaa\r\n  sk-bare  \n\t# indented comment\nbeta\tsk-bbb");
    ASSERT_TRUE(keys) << keys.error().message;
    ASSERT_EQ(keys->size(), 3u);
    EXPECT_EQ((*keys)[0].name, "alpha");
    EXPECT_EQ((*keys)[0].secret, "sk-aaa");
    EXPECT_EQ((*keys)[1].name, "");
    EXPECT_EQ((*keys)[1].secret, "sk-bare");
    EXPECT_EQ((*keys)[2].name, "beta");
    EXPECT_EQ((*keys)[2].secret, "sk-bbb");
}

TEST(ApiKeyFile, MalformedLinesNameTheLineButNeverTheKey) {
    auto three_words = parse_api_key_file("ok sk-1\nname sk-secret-2 extra\n");
    ASSERT_FALSE(three_words);
    EXPECT_NE(three_words.error().message.find("line 2"), std::string::npos) << three_words.error().message;
    EXPECT_EQ(three_words.error().message.find("sk-secret-2"), std::string::npos);

    auto bad_name = parse_api_key_file("na\"me sk-secret-3\n");
    ASSERT_FALSE(bad_name);
    EXPECT_NE(bad_name.error().message.find("line 1"), std::string::npos);
    EXPECT_EQ(bad_name.error().message.find("sk-secret-3"), std::string::npos);

    EXPECT_FALSE(parse_api_key_file("name sk-\x01secret\n"));
    EXPECT_FALSE(parse_api_key_file(std::string(65, 'n') + " sk-long-name\n"));
}

TEST(ApiKeySources, UnnamedKeysAreNumberedByPlaceAcrossFlagsFileAndEnvironment) {
    const std::string file = temp_file("alice sk-file-a\nsk-file-unnamed\n");
    auto keys = load_api_keys({{"sk-flag-1"}, file, "sk-env"});
    std::remove(file.c_str());
    ASSERT_TRUE(keys) << keys.error().message;
    std::vector<std::string> names;
    for (const ApiKey& key : *keys) names.push_back(key.name);
    EXPECT_EQ(names, (std::vector<std::string>{"key1", "alice", "key3", "key4"}));
    EXPECT_EQ((*keys)[3].secret, "sk-env");
}

TEST(ApiKeySources, RefusesUnreadableEmptyOrRepeatedKeysWithoutPrintingThem) {
    EXPECT_FALSE(load_api_keys({{}, "/nonexistent/tempered-keys", ""}));
    const std::string only_comments = temp_file("# nothing here\n\n");
    auto empty = load_api_keys({{}, only_comments, ""});
    std::remove(only_comments.c_str());
    ASSERT_FALSE(empty);
    EXPECT_NE(empty.error().message.find("no key"), std::string::npos);

    auto repeated = load_api_keys({{"sk-same", "sk-same"}, "", ""});
    ASSERT_FALSE(repeated);
    EXPECT_EQ(repeated.error().message.find("sk-same"), std::string::npos) << repeated.error().message;
    const std::string clash = temp_file("key1 sk-named\n");
    EXPECT_FALSE(load_api_keys({{"sk-unnamed"}, clash, ""}));  // the flag's key is key1 too
    std::remove(clash.c_str());
    EXPECT_FALSE(load_api_keys({{""}, "", ""}));
    auto none = load_api_keys({});
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
}

TEST(SecretsEqual, IsPlainEqualityWhateverTheLengths) {
    EXPECT_TRUE(secrets_equal("", ""));
    EXPECT_TRUE(secrets_equal("sk-abc", "sk-abc"));
    EXPECT_FALSE(secrets_equal("sk-abc", "sk-abd"));  // last byte
    EXPECT_FALSE(secrets_equal("sk-abc", "tk-abc"));  // first byte
    EXPECT_FALSE(secrets_equal("sk-abc", "sk-ab"));   // a prefix
    EXPECT_FALSE(secrets_equal("sk-ab", "sk-abc"));
    EXPECT_FALSE(secrets_equal("", "x"));
    EXPECT_FALSE(secrets_equal(std::string_view("ab\0", 3), "ab"));  // padding with zeros is not equality
    for (int c = 1; c < 256; ++c) {
        const std::string other = "sk-" + std::string(1, static_cast<char>(c));
        EXPECT_EQ(secrets_equal("sk-A", other), c == 'A') << c;
    }
}

TEST(AccessControl, KeysProtectEverythingButTheProbes) {
    const AccessControl open(settings({}));
    const AccessControl keyed(settings({{"a", "sk-a"}}));
    const AccessControl all(settings({{"a", "sk-a"}}, /*protect_all=*/true));
    for (const char* path : {"/v1/chat/completions", "/v1/completions", "/v1/models", "/v1/models/{model}",
                             "/flush_cache", "/tokenize", "/detokenize", "/health_generate", "/some_future_endpoint"}) {
        EXPECT_FALSE(open.requires_key(path)) << path;
        EXPECT_TRUE(keyed.requires_key(path)) << path;
        EXPECT_TRUE(all.requires_key(path)) << path;
    }
    for (const char* path :
         {"/health", "/metrics", "/get_load", "/server_info", "/model_info", "/get_server_info", "/get_model_info"}) {
        EXPECT_FALSE(open.requires_key(path)) << path;
        EXPECT_FALSE(keyed.requires_key(path)) << path;
        EXPECT_TRUE(all.requires_key(path)) << path;
    }
}

TEST(AccessControl, ChecksTheBearerTokenAgainstEveryKey) {
    const AccessControl access(settings({{"alice", "sk-alice"}, {"key2", "sk-second"}}));
    EXPECT_FALSE(access.check(with_authorization("Bearer sk-alice")));
    EXPECT_FALSE(access.check(with_authorization("bearer   sk-second ")));
    for (const char* refused :
         {"Bearer sk-alic", "Bearer sk-alice2", "Basic sk-alice", "sk-alice", "Bearer ", "Bearer sk-alice sk-second"}) {
        auto error = access.check(with_authorization(refused));
        ASSERT_TRUE(error) << refused;
        EXPECT_EQ(error->http_status, 401);
        EXPECT_EQ(error->code, "invalid_api_key");
        EXPECT_EQ(error->message.find("sk-"), std::string::npos) << error->message;
    }
    auto missing = access.check(http::HttpRequest{});
    ASSERT_TRUE(missing);
    EXPECT_NE(missing->message.find("didn't provide"), std::string::npos) << missing->message;
}

TEST(AccessControl, UnauthorizedIsOpenAisShapeWithWwwAuthenticate) {
    const AccessControl access(settings({{"a", "sk-a"}}));
    const http::HttpResponse response = unauthorized_response(*access.check(with_authorization("Bearer nope")));
    EXPECT_EQ(response.status, 401);
    EXPECT_EQ(response.headers.find("WWW-Authenticate")->second, "Bearer");
    const auto body = nlohmann::json::parse(response.body);
    EXPECT_EQ(body["error"]["type"], "invalid_request_error");
    EXPECT_EQ(body["error"]["code"], "invalid_api_key");
    EXPECT_TRUE(body["error"]["param"].is_null());
}

TEST(AccessControl, ClientIsTheKeysNameElseTheHeaderElseNone) {
    const AccessControl keyed(settings({{"alice", "sk-alice"}, {"key2", "sk-second"}}, false, "X-Client-Name"));
    http::HttpRequest request = with_authorization("Bearer sk-second");
    request.headers.emplace("X-Client-Name", "ignored-with-keys");
    EXPECT_EQ(keyed.client_of(request), "key2");
    EXPECT_EQ(keyed.client_of(with_authorization("Bearer sk-alice")), "alice");
    EXPECT_EQ(keyed.client_of(http::HttpRequest{}), "unknown");

    const AccessControl by_header(settings({}, false, "X-Client-Name", 2));
    http::HttpRequest named;
    named.headers.emplace("x-client-name", "batch-job");
    EXPECT_EQ(by_header.client_of(named), "batch-job");
    EXPECT_EQ(by_header.client_of(http::HttpRequest{}), "unknown");

    EXPECT_EQ(AccessControl(settings({})).client_of(named), std::nullopt);
}

TEST(AccessControl, DescribesKeysByNameOnly) {
    const AccessControl access(settings({{"a", "sk-secret-a"}, {"b", "sk-secret-b"}}));
    const std::string description = access.describe();
    EXPECT_NE(description.find("2 API keys loaded (names: a, b)"), std::string::npos) << description;
    EXPECT_EQ(description.find("sk-secret"), std::string::npos);
}

TEST(ClientLabels, TheFirstNDistinctValuesKeepTheirLabelTheRestAreOther) {
    ClientLabels labels(32);
    for (int i = 1; i <= 32; ++i)
        EXPECT_EQ(labels.label_for("client-" + std::to_string(i)), "client-" + std::to_string(i));
    EXPECT_EQ(labels.label_for("client-33"), "other");
    EXPECT_EQ(labels.label_for("client-34"), "other");
    EXPECT_EQ(labels.label_for("client-1"), "client-1");  // known values stay themselves
    EXPECT_EQ(labels.label_for("client-32"), "client-32");
    EXPECT_EQ(labels.label_for(""), "unknown");  // outside the bound
    EXPECT_EQ(ClientLabels(0).label_for("anyone"), "other");
}

TEST(ClientLabels, SanitizesToShortPrintableText) {
    EXPECT_EQ(ClientLabels::sanitize("  OpenAI/Python 1.52.0 "), "OpenAI/Python 1.52.0");
    EXPECT_EQ(ClientLabels::sanitize("a\"b\\c\nd\x7f"
                                     "e\xc3\xa9"),
              "a_b_c_d_e__");
    EXPECT_EQ(ClientLabels::sanitize(std::string(500, 'x')), std::string(ClientLabels::kMaxLabelBytes, 'x'));
    EXPECT_EQ(ClientLabels::sanitize("   "), "unknown");
}

TEST(ClientLabels, BoundHoldsUnderConcurrentClients) {
    ClientLabels labels(32);
    std::vector<std::thread> threads;
    std::mutex mutex;
    std::set<std::string> seen;
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 50; ++i) {
                const std::string label = labels.label_for("c" + std::to_string((t * 50 + i) % 100));
                std::lock_guard lock(mutex);
                seen.insert(label);
            }
        });
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(seen.size(), 33u);  // 32 own labels and "other"
    EXPECT_TRUE(seen.count("other"));
}

}  // namespace edge_access_control_test
}  // namespace
}  // namespace tempered
