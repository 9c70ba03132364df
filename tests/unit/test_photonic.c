/* Unit tests for netmodels/photonic: circuit setup cost, reuse, LRU eviction, waiting for a
 * port, receiver-buffer waits (one and several senders: FIFO, no overtaking, no starvation)
 * and chunking, on scripted cases solved by hand.
 * Every case: circuits of 1 GB/s (1000 B = 1 us), setup 5 us, latency 10 ns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "netmodels/photonic.h"
#include "sim/engine.h"

#define US INT64_C(1000000) /* ps */
#define LAT INT64_C(10000)
#define SETUP (5 * US)

typedef struct rig {
    mt_engine *e;
    mt_photonic *ph;
    mt_netmodel net;
    mt_time_ps at[8];
} rig;

static void on_done(void *ctx, uint64_t tag) {
    rig *r = ctx;
    r->at[tag] = mt_engine_now(r->e);
}

static void rig_init(rig *r, int32_t ports, double buffer) {
    memset(r, 0, sizeof *r);
    mt_photonic_params p;
    mt_photonic_params_init(&p);
    p.endpoints = 4;
    p.ports = ports;
    p.total_bw_Bps = 1e9 * ports;
    p.setup_ns = SETUP / 1000.0;
    p.latency_ns = LAT / 1000.0;
    p.buffer_bytes = buffer;
    r->e = mt_engine_new();
    assert_int_equal(mt_photonic_new(&p, mt_engine_sched(r->e), &r->ph, NULL), MT_OK);
    r->net = mt_photonic_netmodel(r->ph);
    for (int i = 0; i < 8; i++) r->at[i] = -1;
}

static void send(rig *r, int32_t a, int32_t b, double bytes, uint64_t tag) {
    assert_int_equal(mt_net_send(&r->net, a, b, bytes, on_done, r, tag, NULL), MT_OK);
}

static void rig_free(rig *r) {
    mt_net_free(&r->net);
    mt_engine_free(r->e);
}

/* Scheduled sends: tag, at time. */
typedef struct later {
    rig *r;
    int32_t a, b;
    double bytes;
    uint64_t tag;
} later;

static void fire(void *ctx, uint64_t arg) {
    (void)arg;
    later *l = ctx;
    send(l->r, l->a, l->b, l->bytes, l->tag);
}

static void setup_then_reuse(void **state) {
    (void)state;
    rig r;
    rig_init(&r, 1, 1e9);
    send(&r, 0, 1, 1000, 0);
    later l = {&r, 1, 0, 2000, 1}; /* the reverse direction reuses the duplex circuit */
    mt_engine_at(r.e, 20 * US, fire, &l, 0);
    assert_int_equal(mt_engine_run(r.e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(r.at[0], SETUP + 1 * US + LAT);
    assert_int_equal(r.at[1], 20 * US + 2 * US + LAT); /* no second setup */
    mt_photonic_counters c;
    mt_photonic_counters_get(r.ph, &c);
    assert_int_equal(c.setups, 1);
    assert_int_equal(c.teardowns, 0);
    assert_true(mt_photonic_has_circuit(r.ph, 0, 1));
    rig_free(&r);
}

/* Two ports at endpoint 0: circuits 0-1 (last used at ~6 us) and 0-2 (last used ~30 us);
 * a send 0 -> 3 at 50 us evicts the least recently used, 0-1. */
static void lru_eviction(void **state) {
    (void)state;
    rig r;
    rig_init(&r, 2, 1e9);
    send(&r, 0, 1, 1000, 0);
    later l2 = {&r, 0, 2, 1000, 1}, l3 = {&r, 0, 3, 1000, 2};
    mt_engine_at(r.e, 20 * US, fire, &l2, 0);
    mt_engine_at(r.e, 50 * US, fire, &l3, 0);
    assert_int_equal(mt_engine_run(r.e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(r.at[2], 50 * US + SETUP + 1 * US + LAT);
    assert_false(mt_photonic_has_circuit(r.ph, 0, 1));
    assert_true(mt_photonic_has_circuit(r.ph, 0, 2));
    assert_true(mt_photonic_has_circuit(r.ph, 0, 3));
    mt_photonic_counters c;
    mt_photonic_counters_get(r.ph, &c);
    assert_int_equal(c.setups, 3);
    assert_int_equal(c.teardowns, 1);
    rig_free(&r);
}

/* One port: 0 -> 2 is requested while 0 -> 1 is busy, so it waits for that circuit to go
 * idle (at its delivery), tears it down and sets up its own. */
static void waits_for_a_port(void **state) {
    (void)state;
    rig r;
    rig_init(&r, 1, 1e9);
    send(&r, 0, 1, 4000, 0);
    send(&r, 0, 2, 1000, 1);
    assert_int_equal(mt_engine_run(r.e, MT_TIME_NEVER, NULL), MT_OK);
    mt_time_ps first = SETUP + 4 * US + LAT;
    assert_int_equal(r.at[0], first);
    assert_int_equal(r.at[1], first + SETUP + 1 * US + LAT);
    mt_photonic_counters c;
    mt_photonic_counters_get(r.ph, &c);
    assert_int_equal(c.port_waits, 1);
    assert_int_equal(c.teardowns, 1);
    rig_free(&r);
}

/* Receiver 2 has 1000 B of buffer; 0 and 1 each send it 1000 B at once. Both circuits come
 * up at SETUP; the first reserves the buffer, the second waits until the first arrives. */
static void buffer_wait(void **state) {
    (void)state;
    rig r;
    rig_init(&r, 2, 1000);
    send(&r, 0, 2, 1000, 0);
    send(&r, 1, 2, 1000, 1);
    assert_int_equal(mt_engine_run(r.e, MT_TIME_NEVER, NULL), MT_OK);
    mt_time_ps first = SETUP + 1 * US + LAT;
    assert_int_equal(r.at[0], first);
    assert_int_equal(r.at[1], first + 1 * US + LAT);
    mt_photonic_counters c;
    mt_photonic_counters_get(r.ph, &c);
    assert_int_equal(c.buffer_waits, 1);
    rig_free(&r);
}

/* A message larger than the buffer goes in buffer-sized chunks, each waiting for the previous
 * one to arrive (credit-based): 3 x (1 us + 10 ns). */
static void chunked_by_buffer(void **state) {
    (void)state;
    rig r;
    rig_init(&r, 1, 1000);
    send(&r, 0, 1, 3000, 0);
    assert_int_equal(mt_engine_run(r.e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(r.at[0], SETUP + 3 * (1 * US + LAT));
    rig_free(&r);
}

/* Senders 0, 1, 2 send bytes[k] to endpoint 3 at time 0 (in that order; three ports each, so
 * every circuit comes up at SETUP) and the run ends; returns the buffer waits. */
static uint64_t three_to_one(rig *r, double buffer, double b0, double b1, double b2) {
    rig_init(r, 3, buffer);
    send(r, 0, 3, b0, 0);
    send(r, 1, 3, b1, 1);
    send(r, 2, 3, b2, 2);
    assert_int_equal(mt_engine_run(r->e, MT_TIME_NEVER, NULL), MT_OK);
    mt_photonic_counters c;
    mt_photonic_counters_get(r->ph, &c);
    return c.buffer_waits;
}

/* Receiver room for one chunk (1000 B): 0 reserves it, 1 and 2 queue in that order, and each
 * arrival frees the buffer for the next in line: deliveries one (1 us + LAT) slot apart. Before
 * the FIFO fix a woken sender saw the others still queued, queued again behind them, and the
 * wake-up loop never ended. */
static void several_senders_wait_in_fifo_order(void **state) {
    (void)state;
    rig r;
    assert_int_equal(three_to_one(&r, 1000, 1000, 1000, 1000), 2);
    for (int k = 0; k < 3; k++) assert_int_equal(r.at[k], SETUP + (k + 1) * (1 * US + LAT));
    rig_free(&r);
}

/* FIFO means no overtaking: buffer 2500 B; 0 reserves 2000, 1 needs 1000 and waits, and 2's
 * 500 would fit but waits behind 1. When 0's chunk arrives (SETUP + 2 us + LAT) both start. */
static void a_small_chunk_does_not_overtake(void **state) {
    (void)state;
    rig r;
    assert_int_equal(three_to_one(&r, 2500, 2000, 1000, 500), 2);
    mt_time_ps first = SETUP + 2 * US + LAT;
    assert_int_equal(r.at[0], first);
    assert_int_equal(r.at[1], first + 1 * US + LAT);
    assert_int_equal(r.at[2], first + US / 2 + LAT);
    rig_free(&r);
}

/* No starvation, round robin: with a 1000 B buffer, 0's second chunk queues behind 1 and 2
 * (which queued while its first was out). 0 sends 3 chunks, 1 and 2 one each: the receiver
 * takes 0a, 1, 2, 0b, 0c, one slot each. With 40 chunks each and a queue that never empties,
 * sender k's last chunk is slot 118 + k, and every chunk but the first waited. */
static void no_sender_starves(void **state) {
    (void)state;
    const mt_time_ps slot = 1 * US + LAT;
    rig r;
    assert_int_equal(three_to_one(&r, 1000, 3000, 1000, 1000), 4);
    assert_int_equal(r.at[1], SETUP + 2 * slot);
    assert_int_equal(r.at[2], SETUP + 3 * slot);
    assert_int_equal(r.at[0], SETUP + 5 * slot);
    rig_free(&r);
    assert_int_equal(three_to_one(&r, 1000, 40000, 40000, 40000), 119);
    for (int k = 0; k < 3; k++) assert_int_equal(r.at[k], SETUP + (118 + k) * slot);
    rig_free(&r);
}

static void on_left(void *ctx, uint64_t tag) {
    rig *r = ctx;
    r->at[4 + tag] = mt_engine_now(r->e);
}

/* send_sent: a message has left when its last chunk has gone out. 3000 B through a 1000 B
 * buffer: chunk 2 starts when chunk 1 arrives, so the last leaves at SETUP + 3 us + 2 LAT and
 * arrives a LAT later. Nothing to send (0 bytes, or to itself): left at once. */
static void sent_when_the_last_chunk_leaves(void **state) {
    (void)state;
    rig r;
    rig_init(&r, 1, 1000);
    assert_true(mt_net_can(&r.net, MT_NETOP_SEND_SENT));
    assert_int_equal(mt_net_send_sent(&r.net, 0, 1, 3000, on_left, on_done, &r, 0, NULL), MT_OK);
    assert_int_equal(mt_net_send_sent(&r.net, 2, 3, 0, on_left, on_done, &r, 1, NULL), MT_OK);
    assert_int_equal(mt_net_send_sent(&r.net, 2, 2, 100, on_left, on_done, &r, 2, NULL), MT_OK);
    assert_int_equal(mt_engine_run(r.e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(r.at[4], SETUP + 3 * US + 2 * LAT);
    assert_int_equal(r.at[0], SETUP + 3 * (US + LAT));
    assert_int_equal(r.at[5], 0);
    assert_int_equal(r.at[1], LAT);
    assert_int_equal(r.at[6], 0);
    assert_int_equal(r.at[2], 0);
    rig_free(&r);
}

static void defaults_and_refusals(void **state) {
    (void)state;
    mt_photonic_params p;
    mt_photonic_params_init(&p);
    assert_int_equal(p.endpoints, 0); /* MT_PHOTONIC_ENDPOINTS (84), or one per GPU of a topology */
    assert_int_equal(p.ports, 8);
    assert_true(p.total_bw_Bps == 484e9);
    assert_true(p.setup_ns == 20e6);
    rig r;
    rig_init(&r, 1, 1e9);
    mt_error err = {0};
    assert_int_equal(mt_net_send(&r.net, 0, 9, 1, on_done, &r, 0, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "outside 0..3"));
    send(&r, 2, 2, 100, 3); /* local: immediate */
    assert_int_equal(mt_engine_run(r.e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(r.at[3], 0);
    rig_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(setup_then_reuse),  cmocka_unit_test(lru_eviction),
        cmocka_unit_test(waits_for_a_port),  cmocka_unit_test(buffer_wait),
        cmocka_unit_test(chunked_by_buffer), cmocka_unit_test(several_senders_wait_in_fifo_order),
        cmocka_unit_test(a_small_chunk_does_not_overtake), cmocka_unit_test(no_sender_starves),
        cmocka_unit_test(sent_when_the_last_chunk_leaves), cmocka_unit_test(defaults_and_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
