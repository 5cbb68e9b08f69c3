// Everything a command or the server needs from a model file, loaded once: the mapped file, the tokenizer, the
// chat template, the model itself and the threads that run it.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "core/thread_pool.h"
#include "formats/gguf.h"
#include "models/model.h"
#include "tokenizer/tokenizer.h"

namespace tempered {

struct LoadedModel {
    std::string path;
    std::unique_ptr<GgufFile> file;  // the model's weights live in its mapping
    std::unique_ptr<Tokenizer> tokenizer;
    std::string chat_template;  // "" when the file has none
    std::unique_ptr<ThreadPool> pool;
    std::unique_ptr<Model> model;
};

// `name_or_path` as --model takes it; `threads` <= 0 means every core.
Result<std::unique_ptr<LoadedModel>> load_model_bundle(const std::string& name_or_path, int threads);

}  // namespace tempered
