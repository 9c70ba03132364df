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

/* Dense peaks in TFLOP/s: fp64, fp32, tf32, bf16, fp16, fp8; bandwidth GB/s; memory GB. */
static const struct builtin {
    const char *name;
    const char *match[MT_GPU_MATCH_MAX];
    double tflops[MT_DT_COUNT];
    double bw_GBps, mem_GB;
    const char *note;
} builtins[] = {
    {"H100-PCIe", {"h100+pcie"}, {51, 51, 378, 756, 756, 1513}, 2000, 80, "H100 PCIe 80GB"},
    {"H100-SXM", {"h100"}, {67, 67, 494.7, 989.4, 989.4, 1978.9}, 3350, 80, "H100 SXM5 80GB HBM3"},
    {"H200", {"h200"}, {67, 67, 494.7, 989.4, 989.4, 1978.9}, 4800, 141, "H200 SXM 141GB HBM3e"},
    {"A100-80GB", {"a100+80gb"}, {19.5, 19.5, 156, 312, 312, 0}, 2039, 80, "A100 SXM4 80GB"},
    {"A100-40GB", {"a100"}, {19.5, 19.5, 156, 312, 312, 0}, 1555, 40, "A100 SXM4 40GB"},
    {"V100", {"v100"}, {7.8, 15.7, 0, 0, 125, 0}, 900, 32, "V100 SXM2 32GB; no TF32/BF16"},
    {"A40", {"a40"}, {0.58, 37.4, 74.8, 149.7, 149.7, 0}, 696, 48, "A40 48GB GDDR6"},
    {"L40S", {"l40s"}, {1.4, 91.6, 183, 362, 362, 733}, 864, 48, "L40S 48GB GDDR6"},
    {"RTX-2080Ti", {"2080+ti"}, {0.42, 13.4, 0, 0, 53.8, 0}, 616, 11,
     "GeForce RTX 2080 Ti; FP16 with FP32 accumulate"},
    {"MI250", {"mi250"}, {45.3, 45.3, 0, 181, 181, 0}, 1638.4, 64,
     "one GCD of an MI250 (a PyTorch device); the OAM module has two"},
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
    snprintf(g->note, sizeof g->note, "%s", b->note);
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
