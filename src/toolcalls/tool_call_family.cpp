#include "toolcalls/tool_call_family.h"

#include <algorithm>
#include <array>

namespace tempered::toolcalls {

// Each defined in its family's file. A list, not self-registration: the families live in a static
// library, whose objects the linker drops unless something references them.
const ToolCallFamilyDescriptor& hermes_family();
const ToolCallFamilyDescriptor& mistral_family();
const ToolCallFamilyDescriptor& llama3_json_family();
const ToolCallFamilyDescriptor& harmony_family();

namespace {

bool teaches(const ToolCallFamilyDescriptor& family, std::string_view chat_template) {
    return std::ranges::any_of(family.template_markers, [&](const std::vector<std::string_view>& markers) {
        return std::ranges::all_of(
            markers, [&](std::string_view marker) { return chat_template.find(marker) != std::string_view::npos; });
    });
}

}  // namespace

// In detection order: a Mistral or Llama template never mentions <tool_call>, while Hermes-style ones
// may mention JSON, so Hermes' marker is looked for first and Llama 3's loose ones last; harmony's markers
// are in no other family's template.
std::span<const ToolCallFamilyDescriptor* const> tool_call_families() {
    static const std::array families = {&hermes_family(), &mistral_family(), &harmony_family(), &llama3_json_family()};
    return families;
}

const ToolCallFamilyDescriptor& describe(ToolCallFamily family) {
    for (const ToolCallFamilyDescriptor* known : tool_call_families()) {
        if (known->id == family) return *known;
    }
    return hermes_family();
}

std::string_view family_name(ToolCallFamily family) { return describe(family).name; }

std::optional<ToolCallFamily> family_from_name(std::string_view name) {
    for (const ToolCallFamilyDescriptor* family : tool_call_families()) {
        if (family->name == name) return family->id;
    }
    return std::nullopt;
}

std::optional<ToolCallFamily> detect_family(std::string_view chat_template) {
    for (const ToolCallFamilyDescriptor* family : tool_call_families()) {
        if (teaches(*family, chat_template)) return family->id;
    }
    return std::nullopt;
}

}  // namespace tempered::toolcalls
