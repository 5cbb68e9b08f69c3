#include "server/webui_routes.h"

#include <algorithm>
#include <string>

namespace tempered {
namespace {

// What the page may load and run: only its own files from this server, no inline script, no plugins,
// no framing. A sanitiser slip in rendering model output then still cannot run anything.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const EmbeddedFile* find_file(std::string_view name) {
    const auto files = webui_files();
    const auto it = std::find_if(files.begin(), files.end(), [&](const EmbeddedFile& f) { return f.name == name; });
    return it == files.end() ? nullptr : &*it;
}

bool ends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// If-None-Match is a list of quoted tags, or `*`.
bool etag_matches(std::string_view if_none_match, std::string_view etag) {
    return if_none_match == "*" || if_none_match.find(etag) != std::string_view::npos;
}

http::HttpResponse not_found() { return http::HttpResponse::text(404, "no such web UI file\n"); }

}  // namespace

std::string_view webui_content_type(std::string_view file_name) {
    if (ends_with(file_name, ".html")) return "text/html; charset=utf-8";
    // Not text/javascript: cpp-httplib compresses every text/* body, at brotli's slowest quality, on each
    // request (half a second for marked on a busy core). It leaves this type alone, browsers run it, and
    // the whole page is ~150 KB uncompressed, a few milliseconds on loopback.
    if (ends_with(file_name, ".js")) return "application/javascript; charset=utf-8";
    if (ends_with(file_name, ".css")) return "text/css; charset=utf-8";
    if (ends_with(file_name, ".svg")) return "image/svg+xml";
    if (ends_with(file_name, ".png")) return "image/png";
    return "application/octet-stream";
}

http::HttpResponse webui_file_response(const EmbeddedFile& file, const http::HttpRequest& request) {
    const std::string etag = "\"" + std::string(file.sha256.substr(0, 32)) + "\"";
    http::HttpResponse response;
    if (etag_matches(request.header("If-None-Match"), etag)) {
        response.status = 304;
        response.content_type = std::string(webui_content_type(file.name));
    } else {
        response = http::HttpResponse::text(200, std::string(file.bytes), std::string(webui_content_type(file.name)));
    }
    response.headers.emplace("ETag", etag);
    response.headers.emplace("Cache-Control", "no-cache");
    response.headers.emplace("X-Content-Type-Options", "nosniff");
    if (ends_with(file.name, ".html")) {
        response.headers.emplace("Content-Security-Policy", std::string(kContentSecurityPolicy));
        response.headers.emplace("Referrer-Policy", "no-referrer");
    }
    return response;
}

void register_webui_routes(GuardedRoutes& routes) {
    routes.page("/", [](const http::HttpRequest& request) {
        const EmbeddedFile* index = find_file("index.html");
        return index ? webui_file_response(*index, request) : not_found();
    });
    routes.page("/webui/{file}", [](const http::HttpRequest& request) {
        const auto it = request.path_params.find("file");
        const std::string name = it == request.path_params.end() ? "" : it->second;
        const EmbeddedFile* file = find_file(name);
        return file ? webui_file_response(*file, request) : not_found();
    });
}

}  // namespace tempered
