// POST /v1/responses, GET and DELETE /v1/responses/{id}: OpenAI's Responses API as a translation onto the
// chat path (api/responses_request.h in, server/responses_response.h out), so a response is governed as a
// chat completion is (sampling and its report, tool-call checks, grammar, reasoning budget, loop guard,
// limits, keys, metrics, the request log under endpoint "responses"). Stored responses (response_store.h)
// carry a conversation on through previous_response_id.
#pragma once

#include "edge/guarded_routes.h"
#include "server/chat_service.h"
#include "server/response_store.h"

namespace tempered {

class ResponsesService {
public:
    // Both outlive the service.
    ResponsesService(ChatService& chat, ResponseStore& store) : chat_(chat), store_(store) {}

    void register_routes(GuardedRoutes& routes);

private:
    http::HttpResponse create(const http::HttpRequest& request);
    http::HttpResponse retrieve(const http::HttpRequest& request);
    http::HttpResponse remove(const http::HttpRequest& request);

    ChatService& chat_;
    ResponseStore& store_;
};

}  // namespace tempered
