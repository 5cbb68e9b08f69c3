// Which instruction set the CPU kernels use. Chosen once per process: the best the CPU supports,
// or the one named by TEMPERED_CPU_ISA=scalar|avx2|avx512 (clamped to what the CPU supports), so
// every path can be exercised on one machine.
#pragma once

#include <optional>
#include <string_view>

namespace tempered {

enum class CpuIsa { Scalar, Avx2, Avx512 };

std::string_view cpu_isa_name(CpuIsa isa);
std::optional<CpuIsa> parse_cpu_isa(std::string_view name);

// Whether this CPU can run kernels built for `isa` (AVX-512 means F, BW, VL, DQ and VNNI).
bool cpu_supports(CpuIsa isa);

// The ISA the dispatching kernels use: TEMPERED_CPU_ISA if set and supported, else the best supported.
CpuIsa active_cpu_isa();

}  // namespace tempered
