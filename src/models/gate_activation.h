// The gated feed-forward's activation, ffn_down(act(ffn_gate x, ffn_up x)), shared by the dense feed-forward
// (decoder.cpp) and every expert of a mixture (moe_ffn.h).
#pragma once

#include <cstdint>

#include "kernels/cpu/ops.h"

namespace tempered {

enum class GateActivation {
    Silu,         // SwiGLU, silu(gate) * up; llama, qwen, deepseek
    GeluTanh,     // GeGLU with the tanh approximation of GELU; gemma
    SiluClamped,  // gpt-oss: silu_alpha(min(gate, limit)) * (clamp(up, -limit, limit) + 1)
};

struct GateFunction {
    GateActivation kind = GateActivation::Silu;
    float alpha = 1.702f;  // SiluClamped: silu_alpha(x) = x * sigmoid(alpha x); gpt-oss's constant
    float limit = 7.0f;    // SiluClamped: the clamp; gpt-oss's constant

    // gate (n) = act(gate, up), in place.
    void apply(float* gate, const float* up, int64_t n) const {
        switch (kind) {
            case GateActivation::Silu: return swiglu(gate, up, gate, n);
            case GateActivation::GeluTanh: return geglu_tanh(gate, up, gate, n);
            case GateActivation::SiluClamped: return swiglu_clamped(gate, up, gate, n, alpha, limit);
        }
    }
};

}  // namespace tempered
