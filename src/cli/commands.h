// Each subcommand lives in its own file and registers itself on the CLI11 app (the measurement
// commands bench, model-bench and membench live in tools/commands/tool_commands.h). A command's callback
// stores its process exit code in `exit_code` (0 ok, 1 bad input or failure) instead of exiting.
#pragma once

#include <CLI/CLI.hpp>

namespace tempered {

void add_inspect_command(CLI::App& app, int& exit_code);
void add_run_command(CLI::App& app, int& exit_code);
void add_serve_command(CLI::App& app, int& exit_code);

}  // namespace tempered
