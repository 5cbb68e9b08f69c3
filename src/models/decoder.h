// The one decoder-only transformer: blocks of RMSNorm, rotary GQA attention (global or sliding-window)
// and a gated feed-forward, with what differs between families (rope pairing, Q/K/V biases, QK-norm,
// post-norms, activation, scales, windows, ...) read from a DecoderSpec. The output projection is tied
// to the token embeddings when output.weight is absent.
#pragma once

#include <memory>

#include "models/decoder_spec.h"
#include "models/model.h"

namespace tempered {

// Loads the weights `config` and `spec` call for; an Error names a missing or ill-shaped tensor or a
// tensor the spec would ignore.
Result<std::unique_ptr<Model>> load_decoder(const GgufFile& file, ModelConfig config, DecoderSpec spec,
                                            const ModelOptions& options, ThreadPool& pool);

}  // namespace tempered
