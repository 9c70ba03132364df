/* cli/main.c — `mitosis` entry point: dispatches to a subcommand from one table. */
#include <stdio.h>
#include <string.h>

#include <igraph.h>

#include "cli/commands.h"

#define MITOSIS_VERSION "0.1.0"

typedef int (*command_fn)(int argc, char **argv);

static const struct command {
    const char *name;
    command_fn run;
    const char *summary;
} commands[] = {
    {"inspect", cmd_inspect, "read a trace (Kineto+ET, TrioSim CSV) and summarise the step"},
    {"simulate", cmd_simulate, "extrapolate the traced step to N GPUs (dp/ddp/tp/pp/hybrid) and simulate it"},
    {"compare", cmd_compare, "rank every plan for N GPUs, or sweep bandwidth / GPUs / batch for one plan"},
    {"topo", cmd_topo, "describe a topology: nodes, links, bisection bandwidth, routes"},
    {"collective", cmd_collective, "time a collective on a topology (nccl-tests style table)"},
    {"hop", cmd_hop, "decentralized training with stragglers (Hop): backup workers, staleness, gossip graphs"},
    {"perfmodel", cmd_perfmodel, "fit/show operator time models, predict a step at another batch or GPU"},
};

static void usage(FILE *out) {
    fprintf(out, "mitosis %s — predict multi-GPU training time from a one-GPU trace\n\n"
                 "usage: mitosis COMMAND [ARGS...]   (mitosis COMMAND --help for details)\n\n"
                 "commands:\n", MITOSIS_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nUnits: bandwidth is decimal (1 GB/s = 1e9 B/s; 400Gbps = 50 GB/s), sizes "
                 "accept B/KB/MB/GB (decimal) and KiB/MiB/GiB, times ns/us/ms/s.\n");
}

int main(int argc, char **argv) {
    /* igraph's default handler aborts; library code checks return codes instead. */
    igraph_set_error_handler(igraph_error_handler_printignore);
    igraph_set_warning_handler(igraph_warning_handler_ignore);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("mitosis %s\n", MITOSIS_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "mitosis: unknown command '%s' (run 'mitosis --help' for the list)\n", argv[1]);
    return 2;
}
