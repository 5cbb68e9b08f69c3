#include "runtime/chat_template_choice.h"

#include <fstream>
#include <sstream>

#include "chat/chat_template_probe.h"

namespace tempered {
namespace {

constexpr std::streamoff kMaxTemplateFileBytes = 16 << 20;  // real templates are a few KiB

Result<std::string> read_template_file(const std::string& path) {
    std::ifstream file(path, std::ios::binary | std::ios::ate);
    if (!file) return Error{"--chat-template " + path + ": cannot open the file"};
    const std::streamoff size = file.tellg();
    if (size < 0) return Error{"--chat-template " + path + ": cannot read the file"};
    if (size > kMaxTemplateFileBytes) return Error{"--chat-template " + path + ": larger than 16 MiB"};
    file.seekg(0);
    std::ostringstream text;
    text << file.rdbuf();
    if (!file || text.str().empty()) return Error{"--chat-template " + path + ": cannot read the file, or it is empty"};
    return text.str();
}

ChatTemplateProbe probe_for(const Tokenizer& tokenizer) {
    ChatTemplateProbe probe;
    if (auto bos = tokenizer.bos_id()) probe.bos_token = tokenizer.token_text(*bos);
    if (auto eos = tokenizer.eos_id()) probe.eos_token = tokenizer.token_text(*eos);
    return probe;
}

}  // namespace

Result<std::string> choose_chat_template(LoadedModel& bundle, const std::string& template_file) {
    const bool replaced = !template_file.empty();
    if (replaced) {
        auto text = read_template_file(template_file);
        if (!text) return text.error();
        bundle.chat_template = std::move(text).value();
    }
    if (bundle.chat_template.empty()) return std::string();
    auto parsed = ChatTemplate::parse(bundle.chat_template);
    if (!parsed) {
        if (!replaced) return std::string();
        return Error{"--chat-template " + template_file + ": " + parsed.error().message};
    }
    auto probed = probe_chat_template(*parsed, bundle.chat_template, probe_for(*bundle.tokenizer));
    if (probed) return probed;
    if (replaced) {
        return Error{"--chat-template " + template_file + " failed its probe render (" + probed.error().message + ")"};
    }
    return Error{"the model's chat template failed its probe render (" + probed.error().message +
                 "); pass --chat-template FILE to replace it"};
}

}  // namespace tempered
