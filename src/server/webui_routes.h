// The web playground at `/` (webui/): a single page that chats through the public API and shows each
// answer's sampling report. Its files are embedded at build time (embedded_file.h); `--no-webui` leaves
// these routes out, so `/` is a 404. The page and its assets need no API key (a browser navigating to a
// URL sends none); the page asks for the key and sends it on its API calls.
#pragma once

#include <optional>
#include <string_view>

#include "edge/guarded_routes.h"
#include "http/http_types.h"
#include "server/embedded_file.h"

namespace tempered {

// `/` (index.html) and `/webui/{file}` for the other files.
void register_webui_routes(GuardedRoutes& routes);

// The Content-Type a file is served with, from its extension.
std::string_view webui_content_type(std::string_view file_name);

// The response for one embedded file: its bytes with Content-Type, ETag (its SHA-256) and no-cache (the
// browser revalidates, and a rebuilt binary's new files are never mixed with cached old ones); a 304 with
// no body when the request's If-None-Match already names that ETag.
http::HttpResponse webui_file_response(const EmbeddedFile& file, const http::HttpRequest& request);

}  // namespace tempered
