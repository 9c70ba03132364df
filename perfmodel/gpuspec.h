/* perfmodel/gpuspec.h — a table of GPU specs and the roofline that compares two GPUs.
 *
 * Built in (dense peaks from the vendors' datasheets, no structured sparsity; sources named in
 * gpuspec.c): H100-SXM, H100-SXM-500W (power-capped), H100-PCIe, H100-NVL, H800-SXM, H200, B200,
 * GB200, A100-40GB / A100-80GB (SXM4), A100-PCIe-40GB / -80GB, MI300X, V100, A40, L40S,
 * RTX-2080Ti, MI250 (one GCD, which is what PyTorch calls a device; the OAM module holds two).
 * Each entry: peaks per data type, HBM bandwidth and capacity, the GPU-to-GPU link bandwidth per
 * direction, SM count, board power, boost clock and the clock it runs at. A JSON file adds or
 * replaces entries (`--gpu-specs FILE`; link_GBps, sms, tdp_W, boost_MHz optional):
 *
 *   {"gpus": [{"name": "X1", "match": ["x1"], "mem_GBps": 8000, "mem_GB": 192,
 *              "tflops": {"fp64": 40, "fp32": 80, "tf32": 1100, "bf16": 2250,
 *                         "fp16": 2250, "fp8": 4500}, "boost_MHz": 1965, "note": "..."}]}
 *
 * A clock below boost (a power cap, `--gpu-clock MHz`: mt_gpu_set_clock) scales every compute
 * peak by clock / boost and leaves HBM bandwidth alone (memory runs on its own clock).
 *
 * `match` patterns are lower-case substrings joined by '+' ("h100+pcie" matches
 * "NVIDIA H100 PCIe"); file entries are tried before the built-in ones. A missing or zero peak
 * means the GPU lacks that unit (V100: no TF32, no BF16): which unit an op then runs on is
 * perfmodel/mathunit.h's table; mt_gpu_peak alone falls back to the FP32 (CUDA-core) peak.
 *
 * Roofline: time(w) = max(flops / peak(column), bytes / bandwidth). An op is compute-bound when
 * its arithmetic intensity flops/bytes is above the ridge point peak/bandwidth. Moving an op to
 * another GPU is mathunit.h's (mt_unit_move_ns).
 */
#ifndef MT_PERFMODEL_GPUSPEC_H
#define MT_PERFMODEL_GPUSPEC_H

#include "perfmodel/work.h"
#include "util/err.h"

#define MT_GPU_NAME_MAX 48
#define MT_GPU_MATCH_MAX 4

typedef struct mt_gpu_spec {
    char name[MT_GPU_NAME_MAX];
    char match[MT_GPU_MATCH_MAX][MT_GPU_NAME_MAX];
    double peak_flops[MT_DT_COUNT]; /* FLOP/s, 0 = not supported (falls back) */
    double mem_Bps;                 /* bytes per second */
    double mem_bytes;
    double link_Bps;            /* GPU-to-GPU link (NVLink, Infinity Fabric) per direction; 0: none */
    int sms;                    /* streaming multiprocessors (AMD: compute units); 0: unknown */
    int tdp_W;                  /* board power; 0: unknown */
    double boost_MHz;           /* the clock the peaks are stated at; 0: unknown (no --gpu-clock) */
    double clock_MHz;           /* the clock peak_flops holds now (boost unless capped) */
    char note[96];
} mt_gpu_spec;

typedef struct mt_gpu_table {
    mt_gpu_spec *gpus;
    int n;
} mt_gpu_table;

/* The built-in table plus the entries of extra_json (NULL: none). Errors name the file and the
 * JSON path. */
mt_status mt_gpu_table_new(const char *extra_json, mt_gpu_table **out, mt_error *err);
void mt_gpu_table_free(mt_gpu_table *tab);

/* Entry for a device name as traces spell it ("NVIDIA H100 80GB HBM3") or a short name
 * ("H100", "a100-80gb"); NULL when none matches. O(entries). */
const mt_gpu_spec *mt_gpu_find(const mt_gpu_table *tab, const char *name);

/* Comma-separated names of the table into buf (for error messages). */
char *mt_gpu_names(const mt_gpu_table *tab, char *buf, int len);

const char *mt_dtype_name(mt_dtype d);

/* Runs g at MHz: every compute peak times MHz / g->clock_MHz (HBM bandwidth unchanged). A no-op
 * when g's boost clock is unknown or MHz <= 0. O(1). */
void mt_gpu_set_clock(mt_gpu_spec *g, double MHz);

/* Peak FLOP/s of a column, or the FP32 peak when g lacks that unit (peak 0). */
double mt_gpu_peak(const mt_gpu_spec *g, mt_dtype d);
/* Ridge point in FLOP/byte. */
double mt_gpu_ridge(const mt_gpu_spec *g, mt_dtype d);
/* Roofline time in ns of (flops, bytes) on g. */
double mt_roofline_ns(const mt_gpu_spec *g, mt_dtype d, double flops, double bytes);
/* 1 when the work is compute-bound on g (intensity >= ridge). */
int mt_roofline_compute_bound(const mt_gpu_spec *g, mt_dtype d, double flops, double bytes);

#endif
