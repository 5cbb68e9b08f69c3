#include "server/degeneration_response.h"

namespace tempered {

void DegenerationReports::note(const ChoiceDelta& delta) {
    if (!delta.degeneration) return;
    latest_[delta.index] = *delta.degeneration;
    unsent_[delta.index] = true;
}

void DegenerationReports::attach_to_chunk(nlohmann::json& chunk, int index) {
    auto unsent = unsent_.find(index);
    // Only chat and completions chunks have choices; the Responses and Messages builders show the report themselves.
    if (unsent == unsent_.end() || !unsent->second || !chunk.contains("choices")) return;
    for (auto& choice : chunk["choices"]) {
        if (choice.value("index", -1) != index) continue;
        choice["degeneration"] = api::degeneration_json(to_api_degeneration(latest_.at(index), resolved_sampling_));
        unsent->second = false;
    }
}

std::optional<nlohmann::json> DegenerationReports::of_choice(int index) const {
    const auto report = latest_.find(index);
    if (report == latest_.end()) return std::nullopt;
    return api::degeneration_json(to_api_degeneration(report->second, resolved_sampling_));
}

void DegenerationReports::attach_to_body(nlohmann::json& body) const {
    if (latest_.empty() || !body.contains("choices")) return;
    for (auto& choice : body["choices"]) {
        const auto report = latest_.find(choice.value("index", -1));
        if (report == latest_.end()) continue;
        const api::Degeneration shown = to_api_degeneration(report->second, resolved_sampling_);
        choice["degeneration"] = api::degeneration_json(shown);
        if (report->first != 0 || !shown.sampling || !body.contains("sampling")) continue;
        for (const auto& [name, value] : shown.sampling->items()) body["sampling"][name] = value;
    }
}

}  // namespace tempered
