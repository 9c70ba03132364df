/* perfmodel/gpuspec.c — the GPU table (built-in + JSON) and roofline arithmetic. */
#include "perfmodel/gpuspec.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fileio.h"

#define T 1e12
#define GB 1e9

/* Dense peaks in TFLOP/s at the boost clock: fp64, fp32, tf32, bf16, fp16, fp8; HBM GB/s and GB;
 * GPU-to-GPU link (NVLink, Infinity Fabric) GB/s in each direction (half the datasheets'
 * bidirectional figure); SMs (CUs on AMD); board power W; boost MHz; the clock the entry runs at
 * (0: boost; below it, a power-capped part: compute peaks scale by clock / boost, HBM does not).
 * Sources, by datasheet name (dense = the sparse figure halved where only that is printed):
 *   NVIDIA H100 Tensor Core GPU datasheet (SXM5, PCIe, NVL columns; 2023); NVIDIA H100 Tensor Core
 *   GPU Architecture whitepaper (SM counts 132 SXM5 / 114 PCIe, boost clocks); NVIDIA H200 Tensor
 *   Core GPU datasheet; NVIDIA HGX B200 / DGX B200 datasheet (8-GPU totals divided by 8); NVIDIA
 *   GB200 NVL72 datasheet (72-GPU totals divided by 72; FP32 not printed: the B200's); NVIDIA A100
 *   Tensor Core GPU datasheet (SXM4 and PCIe, 40 and 80 GB) and A100 architecture whitepaper (108
 *   SMs, 1410 MHz); NVIDIA H800 PCIe/SXM product brief (H100 silicon, NVLink 400 GB/s); AMD Instinct
 *   MI300X data sheet (304 CUs, 2100 MHz, 750 W); the older parts as before (V100, A40, L40S,
 *   RTX 2080 Ti, MI250 datasheets).
 * H100-SXM-500W: the SXM5 board capped at 500 W (nvidia-smi -pl 500). No datasheet gives its
 * clock; 1755 MHz (0.89 of boost) is the middle of the 10-15 % slowdown reported for that cap on
 * dense GEMMs (issue 44); --gpu-clock sets a measured one. */
static const struct builtin {
    const char *name;
    const char *match[MT_GPU_MATCH_MAX];
    double tflops[MT_DT_COUNT];
    double bw_GBps, mem_GB, link_GBps;
    int sms, tdp_W, boost_MHz, clock_MHz;
    const char *note;
} builtins[] = {
/* One part a line: name, {match...}, {peaks fp64, fp32, tf32, bf16, fp16, fp8 TFLOP/s}, HBM GB/s, GB,
 * link GB/s, SMs, W, boost MHz, clock MHz, note. The H100 SXM5 silicon's peaks are H800's and H200's. */
#define H100_PEAKS {67, 67, 494.7, 989.4, 989.4, 1978.9}
#define A100_PEAKS {19.5, 19.5, 156, 312, 312, 0}
    {"H100-PCIe", {"h100+pcie"}, {51, 51, 378, 756, 756, 1513}, 2000, 80, 300, 114, 350, 1755, 0, "H100 PCIe 80GB HBM2e"},
    {"H100-NVL", {"h100+nvl"}, {60, 60, 417.5, 835.5, 835.5, 1670.5}, 3900, 94, 300, 132, 400, 1785, 0, "H100 NVL 94GB HBM3 (one GPU of the pair)"},
    {"H800-SXM", {"h800"}, H100_PEAKS, 3350, 80, 200, 132, 700, 1980, 0, "H800 SXM5 80GB: H100 silicon, NVLink 400 GB/s"},
    {"H100-SXM-500W", {NULL}, H100_PEAKS, 3350, 80, 450, 132, 500, 1980, 1755, "H100 SXM5 80GB capped at 500 W (clock assumed 1755 MHz)"},
    {"H100-SXM", {"h100"}, H100_PEAKS, 3350, 80, 450, 132, 700, 1980, 0, "H100 SXM5 80GB HBM3"},
    {"H200", {"h200"}, H100_PEAKS, 4800, 141, 450, 132, 700, 1980, 0, "H200 SXM 141GB HBM3e"},
    {"GB200", {"gb200"}, {45, 80, 1250, 2500, 2500, 5000}, 8000, 186, 900, 148, 1200, 1965, 0, "one Blackwell GPU of a GB200 NVL72, 186GB HBM3e"},
    {"B200", {"b200"}, {40, 80, 1125, 2250, 2250, 4500}, 8000, 180, 900, 148, 1000, 1965, 0, "B200 (HGX) 180GB HBM3e"},
    {"A100-PCIe-80GB", {"a100+pcie+80gb", "a100+80gb+pcie"}, A100_PEAKS, 1935, 80, 300, 108, 300, 1410, 0, "A100 PCIe 80GB HBM2e"},
    {"A100-PCIe-40GB", {"a100+pcie"}, A100_PEAKS, 1555, 40, 300, 108, 250, 1410, 0, "A100 PCIe 40GB HBM2"},
    {"A100-80GB", {"a100+80gb"}, A100_PEAKS, 2039, 80, 300, 108, 400, 1410, 0, "A100 SXM4 80GB"},
    {"A100-40GB", {"a100"}, A100_PEAKS, 1555, 40, 300, 108, 400, 1410, 0, "A100 SXM4 40GB"},
    {"MI300X", {"mi300x"}, {163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9}, 5300, 192, 448, 304, 750, 2100, 0, "AMD Instinct MI300X 192GB HBM3 (FP64: matrix peak)"},
    {"V100", {"v100"}, {7.8, 15.7, 0, 0, 125, 0}, 900, 32, 150, 80, 300, 1530, 0, "V100 SXM2 32GB; no TF32/BF16"},
    {"A40", {"a40"}, {0.58, 37.4, 74.8, 149.7, 149.7, 0}, 696, 48, 56, 84, 300, 1740, 0, "A40 48GB GDDR6"},
    {"L40S", {"l40s"}, {1.4, 91.6, 183, 362, 362, 733}, 864, 48, 0, 142, 350, 2520, 0, "L40S 48GB GDDR6"},
    {"RTX-2080Ti", {"2080+ti"}, {0.42, 13.4, 0, 0, 53.8, 0}, 616, 11, 0, 68, 250, 1545, 0, "GeForce RTX 2080 Ti; FP16 with FP32 accumulate"},
    {"MI250", {"mi250"}, {45.3, 45.3, 0, 181, 181, 0}, 1638.4, 64, 0, 110, 280, 1700, 0, "one GCD of an MI250 (a PyTorch device); the OAM module has two"},
#undef A100_PEAKS
#undef H100_PEAKS
};

static const char *const dtype_names[MT_DT_COUNT] = {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8"};

const char *mt_dtype_name(mt_dtype d) { return (unsigned)d < MT_DT_COUNT ? dtype_names[d] : "?"; }

/* Case-insensitive equality ignoring everything but letters and digits ("H100-SXM" == "h100 sxm"). */
static int name_eq(const char *a, const char *b) {
    for (;;) {
        while (*a && !isalnum((unsigned char)*a)) a++;
        while (*b && !isalnum((unsigned char)*b)) b++;
        if (!*a || !*b) return !*a && !*b;
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
        a++;
        b++;
    }
}

static void from_builtin(const struct builtin *b, mt_gpu_spec *g) {
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", b->name);
    for (int i = 0; i < MT_GPU_MATCH_MAX && b->match[i]; i++)
        snprintf(g->match[i], sizeof g->match[i], "%s", b->match[i]);
    for (int d = 0; d < MT_DT_COUNT; d++) g->peak_flops[d] = b->tflops[d] * T;
    g->mem_Bps = b->bw_GBps * GB;
    g->mem_bytes = b->mem_GB * GB;
    g->link_Bps = b->link_GBps * GB;
    g->sms = b->sms;
    g->tdp_W = b->tdp_W;
    g->boost_MHz = b->boost_MHz;
    g->clock_MHz = b->boost_MHz;
    snprintf(g->note, sizeof g->note, "%s", b->note);
    if (b->clock_MHz > 0) mt_gpu_set_clock(g, b->clock_MHz);
}

void mt_gpu_set_clock(mt_gpu_spec *g, double MHz) {
    if (!(g->boost_MHz > 0) || !(MHz > 0)) return;
    double f = MHz / g->clock_MHz;
    for (int d = 0; d < MT_DT_COUNT; d++) g->peak_flops[d] *= f;
    g->clock_MHz = MHz;
}

static mt_status pos_number(const char *path, const char *where, json_t *v, int required,
                            double *out, mt_error *err) {
    *out = 0;
    if (!v) {
        if (required) return mt_fail(err, MT_EFORMAT, "%s: %s: missing (a positive number)", path, where);
        return MT_OK;
    }
    double x = json_number_value(v);
    /* from 1e-6 (1 kB/s, 1 MFLOP/s) to 1e6 (1 PB/s, 1 EFLOP/s): outside, a ratio of two GPUs
     * can overflow an op's time */
    if (!json_is_number(v) || x < 0 || x > 1e6 || (x > 0 && x < 1e-6) || (required && x <= 0))
        return mt_fail(err, MT_EFORMAT, "%s: %s: expected a positive number from 1e-6 to 1e6", path, where);
    *out = x;
    return MT_OK;
}

static mt_status parse_entry(const char *path, size_t i, json_t *e, mt_gpu_spec *g, mt_error *err) {
    char where[96];
    memset(g, 0, sizeof *g);
    if (!json_is_object(e))
        return mt_fail(err, MT_EFORMAT, "%s: gpus[%zu]: expected an object", path, i);
    const char *name = json_string_value(json_object_get(e, "name"));
    if (!name || !*name || strlen(name) >= MT_GPU_NAME_MAX)
        return mt_fail(err, MT_EFORMAT, "%s: gpus[%zu].name: expected a string of 1-%d characters",
                       path, i, MT_GPU_NAME_MAX - 1);
    snprintf(g->name, sizeof g->name, "%s", name);
    json_t *m = json_object_get(e, "match");
    if (m && !json_is_array(m))
        return mt_fail(err, MT_EFORMAT, "%s: gpus[%zu].match: expected an array of strings", path, i);
    size_t k;
    json_t *s;
    int nm = 0;
    json_array_foreach(m, k, s) {
        const char *p = json_string_value(s);
        if (!p || strlen(p) >= MT_GPU_NAME_MAX)
            return mt_fail(err, MT_EFORMAT, "%s: gpus[%zu].match[%zu]: expected a short string", path, i, k);
        if (nm < MT_GPU_MATCH_MAX) {
            snprintf(g->match[nm], sizeof g->match[nm], "%s", p);
            for (char *c = g->match[nm]; *c; c++) *c = (char)tolower((unsigned char)*c);
            nm++;
        }
    }
    double v;
    snprintf(where, sizeof where, "gpus[%zu].mem_GBps", i);
    MT_CHECK(pos_number(path, where, json_object_get(e, "mem_GBps"), 1, &v, err));
    g->mem_Bps = v * GB;
    snprintf(where, sizeof where, "gpus[%zu].mem_GB", i);
    MT_CHECK(pos_number(path, where, json_object_get(e, "mem_GB"), 0, &v, err));
    g->mem_bytes = v * GB;
    json_t *tf = json_object_get(e, "tflops");
    if (!json_is_object(tf))
        return mt_fail(err, MT_EFORMAT, "%s: gpus[%zu].tflops: expected an object with fp32, "
                       "tf32, bf16, fp16, fp8, fp64 peaks", path, i);
    for (int d = 0; d < MT_DT_COUNT; d++) {
        snprintf(where, sizeof where, "gpus[%zu].tflops.%s", i, dtype_names[d]);
        MT_CHECK(pos_number(path, where, json_object_get(tf, dtype_names[d]), d == MT_DT_FP32, &v, err));
        g->peak_flops[d] = v * T;
    }
    static const char *const extra[] = {"link_GBps", "sms", "tdp_W", "boost_MHz"};
    double ex[4];
    for (int x = 0; x < 4; x++) {
        snprintf(where, sizeof where, "gpus[%zu].%s", i, extra[x]);
        MT_CHECK(pos_number(path, where, json_object_get(e, extra[x]), 0, &ex[x], err));
    }
    g->link_Bps = ex[0] * GB;
    g->sms = (int)ex[1];
    g->tdp_W = (int)ex[2];
    g->boost_MHz = g->clock_MHz = ex[3];
    const char *note = json_string_value(json_object_get(e, "note"));
    snprintf(g->note, sizeof g->note, "%s", note ? note : "");
    return MT_OK;
}

mt_status mt_gpu_table_new(const char *extra_json, mt_gpu_table **out, mt_error *err) {
    json_t *root = NULL, *arr = NULL;
    size_t n_extra = 0;
    if (extra_json) {
        MT_CHECK(mt_json_load_config(extra_json, &root, err));
        arr = json_object_get(root, "gpus");
        if (!json_is_array(arr)) {
            json_decref(root);
            return mt_fail(err, MT_EFORMAT, "%s: gpus: expected an array of GPU entries", extra_json);
        }
        n_extra = json_array_size(arr);
    }
    size_t n_builtin = sizeof builtins / sizeof builtins[0];
    mt_gpu_table *tab = calloc(1, sizeof *tab);
    mt_gpu_spec *v = calloc(n_extra + n_builtin, sizeof *v);
    if (!tab || !v) {
        free(tab);
        free(v);
        json_decref(root);
        return mt_fail(err, MT_ENOMEM, "GPU table: out of memory");
    }
    tab->gpus = v;
    for (size_t i = 0; i < n_extra; i++) {
        mt_status rc = parse_entry(extra_json, i, json_array_get(arr, i), &v[tab->n], err);
        if (rc != MT_OK) {
            json_decref(root);
            mt_gpu_table_free(tab);
            return rc;
        }
        tab->n++;
    }
    json_decref(root);
    for (size_t i = 0; i < n_builtin; i++) {
        int replaced = 0;
        for (int j = 0; j < tab->n; j++) replaced |= name_eq(v[j].name, builtins[i].name);
        if (!replaced) from_builtin(&builtins[i], &v[tab->n++]);
    }
    *out = tab;
    return MT_OK;
}

void mt_gpu_table_free(mt_gpu_table *tab) {
    if (!tab) return;
    free(tab->gpus);
    free(tab);
}

/* pattern "a+b": every '+'-separated part is a substring of the lower-cased name */
static int pattern_matches(const char *pat, const char *low) {
    char part[MT_GPU_NAME_MAX];
    while (*pat) {
        size_t n = strcspn(pat, "+");
        if (n == 0 || n >= sizeof part) return 0;
        memcpy(part, pat, n);
        part[n] = 0;
        if (!strstr(low, part)) return 0;
        pat += n;
        if (*pat == '+') pat++;
    }
    return 1;
}

const mt_gpu_spec *mt_gpu_find(const mt_gpu_table *tab, const char *name) {
    if (!tab || !name || !*name) return NULL;
    for (int i = 0; i < tab->n; i++)
        if (name_eq(tab->gpus[i].name, name)) return &tab->gpus[i];
    char low[256];
    snprintf(low, sizeof low, "%s", name);
    for (char *c = low; *c; c++) *c = (char)tolower((unsigned char)*c);
    for (int i = 0; i < tab->n; i++)
        for (int k = 0; k < MT_GPU_MATCH_MAX; k++)
            if (tab->gpus[i].match[k][0] && pattern_matches(tab->gpus[i].match[k], low))
                return &tab->gpus[i];
    return NULL;
}

char *mt_gpu_names(const mt_gpu_table *tab, char *buf, int len) {
    int off = 0;
    if (len > 0) buf[0] = 0;
    for (int i = 0; tab && i < tab->n && off < len; i++)
        off += snprintf(buf + off, (size_t)(len - off), "%s%s", i ? ", " : "", tab->gpus[i].name);
    return buf;
}

double mt_gpu_peak(const mt_gpu_spec *g, mt_dtype d) {
    double v = (unsigned)d < MT_DT_COUNT ? g->peak_flops[d] : 0;
    return v > 0 ? v : g->peak_flops[MT_DT_FP32];
}

double mt_gpu_ridge(const mt_gpu_spec *g, mt_dtype d) { return mt_gpu_peak(g, d) / g->mem_Bps; }

double mt_roofline_ns(const mt_gpu_spec *g, mt_dtype d, double flops, double bytes) {
    double peak = mt_gpu_peak(g, d);
    double tc = peak > 0 ? flops / peak : 0, tm = g->mem_Bps > 0 ? bytes / g->mem_Bps : 0;
    return 1e9 * (tc > tm ? tc : tm);
}

int mt_roofline_compute_bound(const mt_gpu_spec *g, mt_dtype d, double flops, double bytes) {
    return flops >= mt_gpu_ridge(g, d) * bytes && flops > 0;
}
