/* cli/cmd_inspect.c — placeholder, being written. */
#include <stdio.h>

#include "cli/commands.h"

int cmd_inspect(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "mitosis inspect: not implemented yet\n");
    return 2;
}
