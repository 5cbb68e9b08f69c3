#include "kernels/cpu/dispatch.h"

#include <cpuid.h>

#include <cstdlib>

namespace tempered {

std::string_view cpu_isa_name(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::Scalar: return "scalar";
        case CpuIsa::Avx2: return "avx2";
        case CpuIsa::Avx512: return "avx512";
    }
    return "unknown";
}

std::optional<CpuIsa> parse_cpu_isa(std::string_view name) {
    for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512})
        if (name == cpu_isa_name(isa)) return isa;
    return std::nullopt;
}

namespace {

// CPUID leaf 1, ECX bit 29: read directly, as clang's __builtin_cpu_supports does not know "f16c".
bool has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
}

}  // namespace

bool cpu_supports(CpuIsa isa) {
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    switch (isa) {
        case CpuIsa::Scalar: return true;
        case CpuIsa::Avx2: return avx2;
        case CpuIsa::Avx512:
            return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                   __builtin_cpu_supports("avx512vnni");
    }
    return false;
}

CpuIsa active_cpu_isa() {
    static const CpuIsa chosen = [] {
        CpuIsa best = CpuIsa::Scalar;
        for (CpuIsa isa : {CpuIsa::Avx2, CpuIsa::Avx512})
            if (cpu_supports(isa)) best = isa;
        const char* requested = std::getenv("TEMPERED_CPU_ISA");
        if (requested == nullptr) return best;
        const std::optional<CpuIsa> parsed = parse_cpu_isa(requested);
        if (!parsed || !cpu_supports(*parsed)) return best;  // unknown or unsupported: ignore
        return *parsed;
    }();
    return chosen;
}

}  // namespace tempered
