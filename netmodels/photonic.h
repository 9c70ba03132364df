/* netmodels/photonic.h — a circuit-switched (photonic) interconnect, same interface as the
 * flow model (network/netmodel.h), chosen with --network photonic.
 *
 * Each of E endpoints has P optical ports. Moving data from A to B needs a circuit A<->B
 * (duplex: each direction carries total_bw / P). Establishing one takes a port at both ends
 * and setup_ps (default 20 ms); when an end has no free port, its least-recently-used IDLE
 * circuit (nothing queued, sending or in flight) is torn down; when it has none idle, the
 * request waits (FIFO) until a circuit goes idle. Messages on one circuit direction go out
 * one after another. Before a chunk leaves, the sender reserves that many bytes of the
 * receiver's buffer (buffer_bytes; chunks are at most that size) and waits, in FIFO order
 * with other senders, when it is full (or when others already wait there: no overtaking, so
 * senders sharing a receiver take turns chunk by chunk); the space is freed when the chunk
 * arrives and handed to the waiters at the head of the line. A chunk of
 * c bytes arrives c / circuit_bw + latency_ps after it starts. A message has LEFT its source
 * (send_sent's on_sent) when its last chunk has gone out, a latency before it is delivered.
 * Defaults reproduce the wafer-scale case: 12 x 7 = 84 endpoints, 8 ports, 484 GB/s total.
 * The model has no links: the link operations of the netmodel interface (bandwidth factors,
 * failures, per-link statistics, ...) are refused with one line saying so. As a model kind
 * (mt_netmodel_kind_photonic, netmodels/registry.h) it declares its own flags: --ports,
 * --port-bw, --setup-lat, --buffer and --endpoints, written into mt_photonic_params.
 * Costs: O(1) per chunk event plus O(P) per circuit request and O(pending) per idle circuit.
 */
#ifndef MT_NETMODELS_PHOTONIC_H
#define MT_NETMODELS_PHOTONIC_H

#include <stdint.h>

#include "network/netmodel.h"
#include "network/sched.h"
#include "util/err.h"

#define MT_PHOTONIC_ENDPOINTS 84 /* without a topology: a 12 x 7 wafer */

typedef struct mt_photonic_params {
    int32_t endpoints;   /* 0 (default): MT_PHOTONIC_ENDPOINTS, or one per GPU of the topology */
    int32_t ports;       /* per endpoint, default 8 */
    double total_bw_Bps; /* per endpoint over all ports, default 484e9 */
    double port_bw_Bps;  /* > 0: per port, and total_bw_Bps = port_bw_Bps x ports (default 0) */
    double setup_ns;     /* circuit set-up, default 20 ms */
    double latency_ns;   /* per chunk, default 100 ns */
    double buffer_bytes; /* per receiver, default 64 MiB */
} mt_photonic_params;

typedef struct mt_photonic mt_photonic;

typedef struct mt_photonic_counters {
    uint64_t setups, teardowns, buffer_waits, port_waits;
} mt_photonic_counters;

void mt_photonic_params_init(mt_photonic_params *p);
mt_status mt_photonic_new(const mt_photonic_params *p, mt_sched sched, mt_photonic **out,
                          mt_error *err);
void mt_photonic_free(mt_photonic *ph);
void mt_photonic_counters_get(const mt_photonic *ph, mt_photonic_counters *out);
/* 1 when a circuit between a and b is established (up), 0 otherwise. */
int mt_photonic_has_circuit(const mt_photonic *ph, int32_t a, int32_t b);
mt_netmodel mt_photonic_netmodel(mt_photonic *ph);

#endif
