/* serve/clusterreq.h — a web request's cluster run ("command": "cluster") turned into the job file
 * `mitosis cluster FILE` reads (run/cluster.h), so the web UI runs clusters with the CLI's loader,
 * placement and report.
 *
 * The request's "cluster" object: {"topology": "fattree:k=4", "gpus_per_node": 4, "network":
 * {"link-bw": "50GB/s"}, "placement": "packed", "jobs": [{"name": "a", "trace": ID, "options":
 * {"gpus": 8, "strategy": "ddp"}, "placement": "spread", "start_ms": 0, "steps": 1}, ...]}.
 * Each job's trace is a catalogue id (serve/catalog.h: the file gets its path, never a client's);
 * its options and the fabric's "network" are checked as simulate's through the API
 * (serve/options.h: the CLI's flag tables, no option naming a server file, the bandwidth floor)
 * and written as the file's "args" / "network" lists. Refused in one line: an unknown key, a
 * topology that is a file, a trace of several uploaded files (a cluster job reads a folder or one
 * file), more than MT_SERVE_CLUSTER_JOBS jobs. The rest (a network flag in a job's options, a
 * what-if, placements, GPU counts against the fabric) is the loader's, when the run starts.
 * Costs: O(jobs x options).
 */
#ifndef MT_SERVE_CLUSTERREQ_H
#define MT_SERVE_CLUSTERREQ_H

#include <jansson.h>

#include "serve/catalog.h"
#include "util/err.h"

/* Jobs a web cluster run may hold. */
enum { MT_SERVE_CLUSTER_JOBS = 32 };

/* The job file (a new JSON object) for the request's "cluster" object into *out. */
mt_status mt_serve_cluster_file(mt_catalog *cat, const json_t *cluster, json_t **out, mt_error *err);

#endif
