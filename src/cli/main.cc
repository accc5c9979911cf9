#include "cli/cli.h"

int main(int argc, char** argv) { return fulcrum::cli::RunCli(argc, argv); }
