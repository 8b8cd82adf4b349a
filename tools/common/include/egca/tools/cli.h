// Argument parsing for egca's command-line tools, with one convention for all of them:
// --help prints the usage and exits 0; any other parse error prints one line,
// "<tool>: <what is wrong, naming the option>", and exits 2.
#pragma once

#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>

namespace egca::tools {

constexpr int kExitUsage = 2;

// Returns std::nullopt when the arguments parsed and the tool should go on; otherwise the
// exit code to return from main().
inline std::optional<int> ParseArgs(CLI::App& app, int argc, char** argv, const char* tool) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << tool << ": " << e.what() << "\n";
    return kExitUsage;
  }
  return std::nullopt;
}

}  // namespace egca::tools
