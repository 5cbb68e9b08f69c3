#include "cli/commands.h"

#include <cstdio>

namespace tempered {

// Placeholder until the model lands.
void add_run_command(CLI::App& app, int& exit_code) {
    auto* command = app.add_subcommand("run", "Generate text from a prompt or a chat message");
    command->callback([&exit_code] {
        std::fprintf(stderr, "tempered run: not implemented yet\n");
        exit_code = 1;
    });
}

}  // namespace tempered
