#include "cli/commands.h"

#include <cstdio>

namespace tempered {

// Placeholder until the GGUF reader lands: the command exists so the CLI shape is fixed.
void add_inspect_command(CLI::App& app, int& exit_code) {
    auto* command = app.add_subcommand("inspect", "Print a GGUF file's metadata and tensor table");
    command->callback([&exit_code] {
        std::fprintf(stderr, "tempered inspect: not implemented yet\n");
        exit_code = 1;
    });
}

}  // namespace tempered
