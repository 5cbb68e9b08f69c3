// Everything a command or the server needs from a model file, loaded once: the mapped file, the tokenizer, the
// chat template, the model itself and the threads that run it.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "core/thread_pool.h"
#include "formats/gguf.h"
#include "models/model.h"
#include "models/model_config.h"
#include "tokenizer/tokenizer.h"

namespace tempered {

struct LoadedModel {
    std::string path;
    std::unique_ptr<GgufFile> file;  // the model's weights live in its mapping
    std::unique_ptr<Tokenizer> tokenizer;
    std::string chat_template;         // "" when the file has none
    ModelConfig config;                // the model's, or with ModelParts::Tokenizer only read_serving_config's
    std::unique_ptr<ThreadPool> pool;  // null with ModelParts::Tokenizer, or on a shared pool
    std::unique_ptr<Model> model;      // null with ModelParts::Tokenizer
};

// What to load. Upstream mode (another engine runs the model) needs the tokenizer, the chat template and a
// few numbers of the file's metadata, never the weights: their pages are not touched, the model is not
// built, and its architecture need not be one this build runs.
enum class ModelParts { Everything, Tokenizer };

// `name_or_path` as --model takes it; `threads` <= 0 means every core. A Hugging Face directory's matrices are
// converted to `directory_weights` at load (--quantize: Q8_0, F16, BF16 or F32); a GGUF keeps its own types.
// With `shared_pool` the model runs on those threads (a draft model on its target's: the engine thread runs one
// forward at a time) and `pool` stays null.
Result<std::unique_ptr<LoadedModel>> load_model_bundle(const std::string& name_or_path, int threads,
                                                       ModelParts parts = ModelParts::Everything,
                                                       DType directory_weights = DType::Q8_0,
                                                       ThreadPool* shared_pool = nullptr);

// --quantize's names: q8_0, f16, bf16, f32; an Error lists them.
Result<DType> directory_weight_type(const std::string& name);

}  // namespace tempered
