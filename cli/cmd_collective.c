/* cli/cmd_collective.c — placeholder until the network issue lands; replaced by its implementation. */
#include <stdio.h>

#include "cli/commands.h"

int cmd_collective(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "mitosis collective: not implemented yet\n");
    return 2;
}
