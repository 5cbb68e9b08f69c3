// How a choice's loop report shows in responses: the choice's "degeneration" object
// (settings/degeneration_report.h), in whole bodies and in the stream chunk of the delta that carried it.
//
// A whole response with one choice per prompt also shows choice 0's
// switch in its top-level "sampling" (as the policy's changes show there); streams sent that object in
// their first chunk, before any loop, so there it is the choice's object alone. With n > 1 (or several
// prompts) the top level shows choice 0's switch; every choice's own object shows its own.
#pragma once

#include <map>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "api/responses.h"
#include "engine/generation.h"
#include "settings/degeneration_report.h"

namespace tempered {

// One request's loop reports as its deltas bring them, for the generation loop to put into what it sends.
class DegenerationReports {
public:
    explicit DegenerationReports(nlohmann::json resolved_sampling) : resolved_sampling_(std::move(resolved_sampling)) {}

    // Keeps the delta's report, if it has one, as its choice's latest.
    void note(const ChoiceDelta& delta);
    // Streams: a chunk about choice `index` carries that choice's report if one arrived since its last chunk
    // (a delta whose text was held back sends no chunk; its report rides on the next one).
    void attach_to_chunk(nlohmann::json& chunk, int index);
    // Whole responses: each choice's report, and choice 0's sampling switch in body["sampling"] if the
    // body has that report.
    void attach_to_body(nlohmann::json& body) const;
    // Choice `index`'s "degeneration" object, if it had a loop (the request log shows choice 0's).
    std::optional<nlohmann::json> of_choice(int index) const;

private:
    nlohmann::json resolved_sampling_;
    std::map<int, DegenerationReport> latest_;  // by choice index
    std::map<int, bool> unsent_;                // streams: a report arrived since the choice's last chunk
};

}  // namespace tempered
