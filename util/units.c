/* util/units.c — see units.h. */
#include "util/units.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Splits "<number><suffix>" and returns the number; *suffix points past spaces after it. */
static int split_number(const char *text, double *num, const char **suffix) {
    if (!text) return -1;
    char *end = NULL;
    while (isspace((unsigned char)*text)) text++;
    if (*text == '\0') return -1;
    double v = strtod(text, &end);
    if (end == text || !isfinite(v) || v < 0) return -1;
    while (isspace((unsigned char)*end)) end++;
    *num = v;
    *suffix = end;
    return 0;
}

/* Scale of a decimal/binary prefix letter at s; advances *s past it. 1 when absent. */
static double prefix_scale(const char **s) {
    const char *p = *s;
    double dec = 1, bin = 1;
    switch (*p) {
    case 'k': case 'K': dec = 1e3; bin = 1024.0; break;
    case 'M': dec = 1e6; bin = 1024.0 * 1024; break;
    case 'G': case 'g': dec = 1e9; bin = 1024.0 * 1024 * 1024; break;
    case 'T': case 't': dec = 1e12; bin = 1024.0 * 1024 * 1024 * 1024; break;
    case 'P': dec = 1e15; bin = 1024.0 * 1024 * 1024 * 1024 * 1024; break;
    default: return 1;
    }
    p++;
    if (*p == 'i') {
        *s = p + 1;
        return bin;
    }
    *s = p;
    return dec;
}

char *mt_bandwidth_unit_hint(const char *text, char *buf, int len) {
    double v = 0;
    const char *s = "";
    while (text && isspace((unsigned char)*text)) text++;
    if (split_number(text, &v, &s) != 0) v = 0;
    int n = (int)(s - text);
    while (n > 0 && isspace((unsigned char)text[n - 1])) n--;
    if (v >= 1e6) /* meant as bytes per second, probably */
        snprintf(buf, (size_t)len, "write %.*sB/s for bytes per second (= %gGB/s = %gGbps)", n, text, v / 1e9,
                 v * 8 / 1e9);
    else
        snprintf(buf, (size_t)len, "write %.*sGB/s or %gGbps (%.*sB/s for bytes per second)", n, text, v * 8, n,
                 text);
    return buf;
}

mt_status mt_parse_bandwidth_Bps(const char *text, double *out_Bps, int *bare, mt_error *err) {
    double v;
    const char *s;
    *bare = 0;
    if (split_number(text, &v, &s) != 0)
        return mt_fail(err, MT_EINVAL, "bad bandwidth '%s': expected e.g. 300GB/s or 400Gbps",
                       text ? text : "");
    double scale = prefix_scale(&s);
    double unit;
    if (*s == '\0' && scale == 1) {
        unit = 1; /* bare number: bytes per second */
        *bare = 1;
    } else if (!strcmp(s, "B/s") || !strcmp(s, "Bps") || !strcmp(s, "B")) {
        unit = 1;
    } else if (!strcmp(s, "b/s") || !strcmp(s, "bps") || !strcmp(s, "bit/s")) {
        unit = 1.0 / 8.0;
    } else {
        return mt_fail(err, MT_EINVAL,
                       "bad bandwidth unit in '%s': use B/s or bps with k/M/G/T prefixes "
                       "(decimal: 1 GB/s = 1e9 B/s)", text);
    }
    double r = v * scale * unit;
    if (!(r > 0) || !isfinite(r))
        return mt_fail(err, MT_EINVAL, "bandwidth '%s' must be greater than zero and finite", text);
    *out_Bps = r;
    return MT_OK;
}

mt_status mt_parse_bandwidth(const char *text, double *out_Bps, mt_error *err) {
    int bare = 0;
    double v = 0;
    MT_CHECK(mt_parse_bandwidth_Bps(text, &v, &bare, err));
    if (bare) {
        char hint[160];
        return mt_fail(err, MT_EINVAL, "bandwidth '%s' has no unit: %s", text,
                       mt_bandwidth_unit_hint(text, hint, sizeof hint));
    }
    *out_Bps = v;
    return MT_OK;
}

mt_status mt_parse_time_ns(const char *text, double *out_ns, mt_error *err) {
    double v;
    const char *s;
    if (split_number(text, &v, &s) != 0)
        return mt_fail(err, MT_EINVAL, "bad time '%s': expected e.g. 500ns, 2us, 20ms",
                       text ? text : "");
    double scale;
    if (*s == '\0' || !strcmp(s, "ns")) scale = 1;
    else if (!strcmp(s, "ps")) scale = 1e-3;
    else if (!strcmp(s, "us") || !strcmp(s, "µs")) scale = 1e3;
    else if (!strcmp(s, "ms")) scale = 1e6;
    else if (!strcmp(s, "s")) scale = 1e9;
    else
        return mt_fail(err, MT_EINVAL, "bad time unit in '%s': use ps, ns, us, ms or s", text);
    if (!(v * scale <= MT_TIME_MAX_NS))
        return mt_fail(err, MT_EINVAL, "time '%s' is over 1e6 s (11.6 days), more than any simulated run", text);
    *out_ns = v * scale;
    return MT_OK;
}

mt_status mt_parse_bytes(const char *text, double *out_bytes, mt_error *err) {
    double v;
    const char *s;
    if (split_number(text, &v, &s) != 0)
        return mt_fail(err, MT_EINVAL, "bad size '%s': expected e.g. 1G, 25MB, 4KiB",
                       text ? text : "");
    double scale = prefix_scale(&s);
    if (*s == 'B') s++;
    if (*s != '\0')
        return mt_fail(err, MT_EINVAL, "bad size unit in '%s': use B, KB, MB, GB (decimal) or "
                       "KiB, MiB, GiB (binary)", text);
    if (!isfinite(v * scale)) return mt_fail(err, MT_EINVAL, "size '%s' is not finite", text);
    *out_bytes = v * scale;
    return MT_OK;
}

static char *fmt_scaled(double v, const char *const *units, int n, char *buf, int len) {
    int i = 0;
    while (i + 1 < n && fabs(v) >= 1000.0) {
        v /= 1000.0;
        i++;
    }
    snprintf(buf, (size_t)len, "%.2f %s", v, units[i]);
    return buf;
}

char *mt_fmt_bytes(double bytes, char *buf, int len) {
    static const char *const u[] = {"B", "KB", "MB", "GB", "TB", "PB"};
    return fmt_scaled(bytes, u, 6, buf, len);
}

char *mt_fmt_bandwidth(double Bps, char *buf, int len) {
    static const char *const u[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s", "PB/s"};
    return fmt_scaled(Bps, u, 6, buf, len);
}

char *mt_fmt_time_ns(double ns, char *buf, int len) {
    if (ns < 1e3) snprintf(buf, (size_t)len, "%.0f ns", ns);
    else if (ns < 1e6) snprintf(buf, (size_t)len, "%.3f us", ns / 1e3);
    else if (ns < 1e9) snprintf(buf, (size_t)len, "%.3f ms", ns / 1e6);
    else snprintf(buf, (size_t)len, "%.3f s", ns / 1e9);
    return buf;
}
