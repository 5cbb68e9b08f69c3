// The chat template a model is used with: the file --chat-template names, else the model file's own. Either
// is rendered once at load (chat/chat_template_probe.h); a template that fails there refuses the model.
#pragma once

#include <string>

#include "core/result.h"
#include "runtime/loaded_model.h"

namespace tempered {

// Sets bundle.chat_template to the file's text when `template_file` is given, then probes the template.
// The error names the template's problem (the limit it exceeded, say) and what to do about it; the value
// is the probe's note to log ("" when clean). A model file's own template that does not parse is left as
// it was: the server answers completions and refuses chat requests with the parse error, as before.
Result<std::string> choose_chat_template(LoadedModel& bundle, const std::string& template_file);

}  // namespace tempered
