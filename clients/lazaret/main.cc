#include "clients/lazaret/cli.h"

int main(int argc, char** argv) { return lazaret::cli::Main(argc, argv); }
