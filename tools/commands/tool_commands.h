// The measurement subcommands of the `tempered` binary, one file each: `bench` (load for any
// OpenAI-compatible server, tools/loadgen), `model-bench` (the forward pass alone, as llama-bench
// times it) and `membench` (STREAM triad and the batch-1 decode bound, tools/perf). src/cli/main.cpp
// registers them beside the serving commands; as those do, a command's callback stores its process
// exit code in `exit_code` (0 ok, 1 bad input or failure) instead of exiting.
#pragma once

#include <CLI/CLI.hpp>

namespace tempered {

void add_bench_command(CLI::App& app, int& exit_code);
void add_model_bench_command(CLI::App& app, int& exit_code);
void add_membench_command(CLI::App& app, int& exit_code);

}  // namespace tempered
