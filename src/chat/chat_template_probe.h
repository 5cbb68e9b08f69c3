// The load-time probe: a model's chat template rendered once over a conversation every real template
// accepts, under the limits a request renders with, so that a template that loops, recurses or grows
// without end is refused when the model loads instead of failing (or burning time) on every request.
#pragma once

#include <string>

#include "chat/chat_template.h"
#include "core/result.h"

namespace tempered {

struct ChatTemplateProbe {
    std::string bos_token, eos_token;
    JinjaLimits limits;
};

// Renders system + user + assistant + user with add_generation_prompt (and, when the template mentions
// tools, one user turn with a declared tool). Only a template stopped by a limit fails (an Error naming the
// conversation and the limit): it runs away. One that stops itself with raise_exception() passes, as it ran
// to a deliberate error (Gemma refuses a system role, others demand alternating roles); so does one that
// does not fit the probe's input (a tool-use template that iterates `tools` without checking for none), as
// real templates do: the value is then a note to log, "" when every probe rendered or raised.
Result<std::string> probe_chat_template(const ChatTemplate& chat_template, std::string_view template_source,
                                        const ChatTemplateProbe& probe);

}  // namespace tempered
