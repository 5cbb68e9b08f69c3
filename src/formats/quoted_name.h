// A key or tensor name from a model file as it appears in an error message: quoted, control bytes escaped,
// and cut short if a hostile file made it huge, so that the message stays one readable line. GGUF and
// safetensors errors both use it.
#pragma once

#include <string>
#include <string_view>

namespace tempered {

std::string quoted_name(std::string_view text);

}  // namespace tempered
