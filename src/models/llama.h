// The Llama family: pre-norm decoder blocks of RMSNorm, rotary GQA attention and a SwiGLU feed-forward,
// with the output projection tied to the token embeddings when output.weight is absent.
#pragma once

#include <memory>

#include "models/model.h"

namespace tempered {

Result<std::unique_ptr<Model>> load_llama(const GgufFile& file, ModelConfig config, const ModelOptions& options,
                                          ThreadPool& pool);

}  // namespace tempered
