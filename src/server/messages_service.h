// POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API as a translation onto the chat
// path (api/messages_request.h in, server/messages_response.h out), so a message is governed as a chat
// completion is; errors, the key check's 401 included, in Anthropic's envelope. The key may come as
// x-api-key; anthropic-version and anthropic-beta are accepted and change nothing.
#pragma once

#include "edge/guarded_routes.h"
#include "server/chat_service.h"

namespace tempered {

class MessagesService {
public:
    explicit MessagesService(ChatService& chat) : chat_(chat) {}

    void register_routes(GuardedRoutes& routes);

private:
    http::HttpResponse create(const http::HttpRequest& request);
    // The prompt's tokens as the chat template renders it, tools included: {"input_tokens": N}.
    http::HttpResponse count_tokens(const http::HttpRequest& request);

    ChatService& chat_;
};

}  // namespace tempered
