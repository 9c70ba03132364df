/* cli/cmd_topo.c — placeholder until the network issue lands; replaced by its implementation. */
#include <stdio.h>

#include "cli/commands.h"

int cmd_topo(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "mitosis topo: not implemented yet\n");
    return 2;
}
