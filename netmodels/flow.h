/* netmodels/flow.h — the flow-level (packet-switched) network model, `--network flow`.
 *
 * A transfer of S bytes from src to dst occupies every link of its route from the moment it
 * starts until S bytes have been drained at its current rate, then is delivered one path
 * latency later: T = sum(lat) + integral of S over the rate. Rates are max-min fair over all
 * flows sharing links: each link is a constraint and each draining flow a variable of the
 * max-min solver (network/lmm.h).
 *
 * Incremental, after SimGrid: a flow start or drain marks the links it touches as modified and
 * arms one "solve" event at the current time, so a burst of changes at one instant costs one
 * solve. The solver re-computes only the connected component reachable from the modified links
 * (other flows cannot change rate), and the model moves the drain events of only the flows whose
 * rate changed. Nothing is polled.
 * Costs: a start or drain O(hops); a solve O(C log C) for a component with C (flow, link)
 * pairs. A flow with a rate of 0 has no pending event until a solve gives it bandwidth.
 *
 * Behind the netmodel interface (network/netmodel.h) it implements every link operation:
 * bandwidth factor (re-rates flows mid-flow: a flow with half its bytes left when its only link
 * halves takes twice as long for the rest), extra latency (for flows that start afterwards),
 * periodic degradation (lazy: a boundary event is pending only while the link carries flows, so
 * an idle degraded link costs nothing and runs still end), failure (flows crossing the link move,
 * with their remaining bytes, to their new shortest route; when none is left: MT_ENOROUTE naming
 * the two endpoints and the failed links, the stranded flow dropped), changes at a later time,
 * per-link statistics and the link-load observer. It also tells when a send has left its
 * source (send_sent): when its last byte drains, one path latency before delivery; a send with
 * nothing to drain (0 bytes, src == dst) leaves when it starts.
 *
 * Network folding (netmodel.h set_fold / send_folded): a folded send is a flow on replica 0's
 * links whose copies in the other replicas are VIRTUAL — counted per replica-0 link (how many,
 * since when, their peak, the bytes drained), which link_stats adds to every copy link — while
 * its links hold only virtual flows and its copy links nothing. Copy links come from the copies'
 * own routes, mapped one to one and in replica 0's id order (each copy routed, or, where the
 * replicas' endpoints are replica 0's shifted by whole units of the topology's translation symmetry,
 * replica 0's route shifted: network/topology.h mt_topo_route_shifted). When other traffic would meet a
 * virtual copy, the component's copies become flows (materialize: the unfolded state, no extra
 * solve) and must drain with replica 0's; anything else calls the fold's `broken`. Costs: a
 * folded send O(hops) (O(replicas x hops) the first time its pair is seen); a materialization
 * O(replicas x the component).
 *
 * Flow groups (netmodel.h send_group): n sends started together whose routes share no link with
 * each other or with any flow, and have equal hops, latency and bottleneck, each drain alone at
 * that bottleneck, so they run as one drain event and one delivery event (the links' statistics
 * are settled at the drain) instead of a flow, a solve and two events each. While they drain,
 * a flow whose route meets a member's link makes that member a flow first (materialized: the
 * state its own flow would have, started at the group's start, its drain due then), so the run
 * is the unfolded one; a link operation or an observer materializes every member. Groups of fewer
 * than MT_FLOW_GROUP_MIN sends (or any, after set_grouping off) are refused: the caller sends
 * them one by one. With the network folded they run beside replica 0's virtual sends: a group
 * one of whose links carries a virtual copy is refused; a virtual member on a copy link counts
 * as that link's flow (a folded send meeting it is not virtual), and a folded send's copies make
 * the members on their links flows, in every replica, before they start (a hybrid's DP buckets
 * at 2^20 GPUs: 2 M flows -> 128 groups). Costs: O(n x hops) route look-ups and marks at the
 * start and at the drain, two int32 per link once the first group runs; a member whose ends are
 * member 0's shifted (network/topology.h mt_topo_route_shift_steps: a ring's members but its wrap)
 * takes member 0's route shifted, latency and bandwidths, with no route looked up or cached. (A DDP all-reduce of
 * 1,048,576 GPUs as treeflow: 1,048,576 bulk flows on their own NIC rails, bench/bench_scale.sh.)
 */
#ifndef MT_NETMODELS_FLOW_H
#define MT_NETMODELS_FLOW_H

#include <stdint.h>

#include "network/netmodel.h"
#include "network/sched.h"
#include "network/topology.h"
#include "util/err.h"

typedef struct mt_flownet mt_flownet;

/* The fewest sends run as a group: below it the per-send path costs little, and the event
 * counts of small runs stay those of one flow per send. */
#define MT_FLOW_GROUP_MIN 1024

/* The topology (frozen on first route) and scheduler must outlive the model. */
mt_status mt_flownet_new(mt_topo *topo, mt_sched sched, mt_flownet **out, mt_error *err);
void mt_flownet_free(mt_flownet *net);

/* Starts a flow; *flow_id (may be NULL) identifies it until delivery, for mt_flownet_rate.
 * MT_ENOROUTE / MT_EINVAL with a message naming the endpoints. src == dst delivers at once
 * (after an event at the current time). */
mt_status mt_flownet_start(mt_flownet *net, int32_t src, int32_t dst, double bytes,
                           mt_delivered_fn on_delivered, void *ctx, uint64_t tag,
                           int32_t *flow_id, mt_error *err);
/* Current rate of an active flow in bytes/s (after the pending solve ran), or -1 when the
 * flow has drained. */
double mt_flownet_rate(const mt_flownet *net, int32_t flow_id);

/* The model behind the netmodel interface (endpoints = the topology's GPUs). mt_net_free on
 * it frees the flownet. */
mt_netmodel mt_flownet_netmodel(mt_flownet *net);

#endif
