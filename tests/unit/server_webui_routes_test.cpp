// The web UI's embedded files and how each is served (src/server/webui_routes.h).
#include <gtest/gtest.h>

#include <string>

#include "server/webui_routes.h"

namespace tempered {
namespace {
namespace server_webui_routes_test {

const EmbeddedFile& file_named(std::string_view name) {
    for (const EmbeddedFile& file : webui_files())
        if (file.name == name) return file;
    ADD_FAILURE() << "no embedded file " << name;
    static const EmbeddedFile none{};
    return none;
}

TEST(WebUiFiles, ThePageItsScriptsAndTheDebianLibrariesAreEmbeddedWithTheirHashes) {
    for (std::string_view name : {"index.html", "app.js", "style.css", "marked.umd.min.js", "purify.min.js"}) {
        const EmbeddedFile& file = file_named(name);
        EXPECT_FALSE(file.bytes.empty()) << name;
        EXPECT_EQ(file.sha256.size(), 64u) << name;
    }
    EXPECT_NE(file_named("index.html").bytes.find("<!doctype html>"), std::string_view::npos);
    for (const EmbeddedFile& file : webui_files())
        EXPECT_NE(webui_content_type(file.name), "application/octet-stream") << file.name;
}

TEST(WebUiFiles, ContentTypeFollowsTheExtension) {
    EXPECT_EQ(webui_content_type("index.html"), "text/html; charset=utf-8");
    EXPECT_EQ(webui_content_type("app.js"), "application/javascript; charset=utf-8");
    EXPECT_EQ(webui_content_type("style.css"), "text/css; charset=utf-8");
    EXPECT_EQ(webui_content_type("blob.bin"), "application/octet-stream");
}

TEST(WebUiFiles, ServedWithAnEtagAndRevalidatedWithA304) {
    const EmbeddedFile& script = file_named("app.js");
    http::HttpRequest request;
    const http::HttpResponse first = webui_file_response(script, request);
    EXPECT_EQ(first.status, 200);
    EXPECT_EQ(first.body, script.bytes);
    EXPECT_EQ(first.content_type, "application/javascript; charset=utf-8");
    const std::string etag = first.headers.find("ETag")->second;
    EXPECT_EQ(etag, "\"" + std::string(script.sha256.substr(0, 32)) + "\"");
    EXPECT_EQ(first.headers.find("Cache-Control")->second, "no-cache");
    EXPECT_EQ(first.headers.count("Content-Security-Policy"), 0u);

    request.headers.emplace("If-None-Match", etag);
    const http::HttpResponse again = webui_file_response(script, request);
    EXPECT_EQ(again.status, 304);
    EXPECT_TRUE(again.body.empty());

    http::HttpRequest stale;
    stale.headers.emplace("If-None-Match", "\"0123\"");
    EXPECT_EQ(webui_file_response(script, stale).status, 200);
}

TEST(WebUiFiles, ThePageForbidsInlineScriptAndForeignOrigins) {
    const http::HttpResponse page = webui_file_response(file_named("index.html"), http::HttpRequest{});
    const std::string policy = page.headers.find("Content-Security-Policy")->second;
    EXPECT_NE(policy.find("script-src 'self'"), std::string::npos);
    EXPECT_NE(policy.find("connect-src 'self'"), std::string::npos);
    EXPECT_EQ(policy.find("unsafe-inline"), std::string::npos);
}

}  // namespace server_webui_routes_test
}  // namespace
}  // namespace tempered
