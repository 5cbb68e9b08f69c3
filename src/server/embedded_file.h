// A file compiled into the binary: the web playground's pages and scripts (webui/ and the Debian libjs
// files it loads), generated at build time by cmake/embed_files.cmake into webui_files.cpp.
#pragma once

#include <span>
#include <string_view>

namespace tempered {

struct EmbeddedFile {
    std::string_view name;    // the base name it is served under: "index.html", "app.js"
    std::string_view bytes;   // the file as it was at build time
    std::string_view sha256;  // of `bytes`, lowercase hex: the ETag
};

// Every file of the web UI, index.html among them.
std::span<const EmbeddedFile> webui_files();

}  // namespace tempered
