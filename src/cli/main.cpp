// tempered: command-line entry point. Subcommands are registered from src/cli/*_command.cpp and, for
// the measurement tools, tools/commands/*_command.cpp.
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "commands/tool_commands.h"

int main(int argc, char** argv) {
    CLI::App app{"tempered: an LLM inference server that is open about how it samples"};
    app.require_subcommand(1);
    int exit_code = 0;
    tempered::add_bench_command(app, exit_code);
    tempered::add_inspect_command(app, exit_code);
    tempered::add_run_command(app, exit_code);
    tempered::add_serve_command(app, exit_code);
    tempered::add_model_bench_command(app, exit_code);
    tempered::add_membench_command(app, exit_code);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        const int code = app.exit(error);
        return code == 0 ? 0 : 1;
    }
    return exit_code;
}
