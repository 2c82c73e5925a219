// git-zipnn: one binary, so that `git zipnn <command>` works once it is on
// PATH. Everything but this line is in the commands library (cmd/run.cc).
#include "cmd/command.h"

int main(int argc, char** argv) { return zipnn::cmd::Main(argc, argv); }
