#include "http/http_types.h"

#include <algorithm>
#include <cctype>

namespace tempered::http {

bool CaseInsensitiveLess::operator()(std::string_view a, std::string_view b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
        return std::tolower(static_cast<unsigned char>(x)) < std::tolower(static_cast<unsigned char>(y));
    });
}

std::string HttpRequest::header(std::string_view name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
}

HttpResponse HttpResponse::json(int status, std::string body) {
    HttpResponse response;
    response.status = status;
    response.body = std::move(body);
    return response;
}

HttpResponse HttpResponse::text(int status, std::string body, std::string content_type) {
    HttpResponse response;
    response.status = status;
    response.body = std::move(body);
    response.content_type = std::move(content_type);
    return response;
}

HttpResponse HttpResponse::streaming(std::string content_type, ChunkProducer producer, StreamFinished on_finished) {
    HttpResponse response;
    response.content_type = std::move(content_type);
    response.producer = std::move(producer);
    response.on_finished = std::move(on_finished);
    return response;
}

}  // namespace tempered::http
