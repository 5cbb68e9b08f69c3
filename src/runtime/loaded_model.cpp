#include "runtime/loaded_model.h"

#include <thread>

#include "core/allocator.h"
#include "hf/hf_model.h"
#include "runtime/model_names.h"

namespace tempered {

Result<DType> directory_weight_type(const std::string& name) {
    if (name == "q8_0") return DType::Q8_0;
    if (name == "f16") return DType::F16;
    if (name == "bf16") return DType::BF16;
    if (name == "f32") return DType::F32;
    return Error{"--quantize: '" + name + "' is not one of q8_0, f16, bf16, f32"};
}

Result<std::unique_ptr<LoadedModel>> load_model_bundle(const std::string& name_or_path, int threads, ModelParts parts,
                                                       DType directory_weights, ThreadPool* shared_pool) {
    auto path = resolve_model_path(name_or_path);
    if (!path) return path.error();
    auto bundle = std::make_unique<LoadedModel>();
    bundle->path = *path;
    // A Hugging Face directory becomes the same GGUF view (hf/hf_model.h), its matrices converted at load.
    auto file = is_hf_directory(*path)
                    ? open_hf_directory(*path, directory_weights,
                                        parts == ModelParts::Tokenizer ? HfParts::Tokenizer : HfParts::Everything)
                    : GgufFile::open(*path);
    if (!file) return file.error();
    bundle->file = std::make_unique<GgufFile>(std::move(file.value()));
    auto tokenizer = Tokenizer::from_gguf(*bundle->file);
    if (!tokenizer) return Error{*path + ": tokenizer: " + tokenizer.error().message};
    bundle->tokenizer = std::make_unique<Tokenizer>(std::move(tokenizer.value()));
    bundle->chat_template = bundle->file->get_string("tokenizer.chat_template").value_or("");
    if (parts == ModelParts::Tokenizer) {
        auto config = read_serving_config(*bundle->file);
        if (!config) return Error{*path + ": " + config.error().message};
        bundle->config = std::move(config).value();
        return bundle;
    }
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (!shared_pool) bundle->pool = std::make_unique<ThreadPool>(threads);
    auto model = load_model(*bundle->file, shared_pool ? *shared_pool : *bundle->pool);
    if (!model) return Error{*path + ": " + model.error().message};
    bundle->model = std::move(model.value());
    // A directory's converted weights the model repacked are not read again: one copy stays, not two.
    // The freed pages go back now, not at the allocator's next purge: Gemma 3's BF16 copy was 714 MB resident when
    // it first answered, 608 MB after the first trim (its GGUF: 627 MB).
    if (const auto in_use = bundle->model->file_data_in_use()) {
        bundle->file->release_storage_except(*in_use);
        release_free_pages();
    }
    bundle->config = bundle->model->config();
    return bundle;
}

}  // namespace tempered
