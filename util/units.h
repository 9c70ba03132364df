/* util/units.h — parsing and printing of quantities with units, as the CLI accepts them.
 *
 * All prefixes are decimal (1 GB/s = 1e9 B/s, 1 MB = 1e6 B) unless the binary form is written
 * (KiB, MiB, GiB, TiB). Bits are lower-case b ("Gbps", "Gb/s"); bytes are upper-case B.
 * A bare number means the base unit for sizes (bytes) and times (nanoseconds); a bandwidth needs
 * a unit (a bare 100 is refused, not read as 100 B/s: nobody means that), except where a file
 * format documents bare numbers as bytes/s (mt_parse_bandwidth_Bps).
 * Every parser returns MT_EINVAL with a message quoting the text on failure; NaN, infinities
 * (1e999, or 1e300TB), negatives and trailing garbage are refused.
 */
#ifndef MT_UTIL_UNITS_H
#define MT_UTIL_UNITS_H

#include <stdint.h>

#include "util/err.h"

/* "300GB/s", "400Gbps", "25Gb/s", "1.5TB/s", "100B/s" -> bytes per second (> 0). A number
 * without a unit is refused: "bandwidth '100' has no unit: write 100GB/s or 800Gbps (100B/s for
 * bytes per second)". */
mt_status mt_parse_bandwidth(const char *text, double *out_Bps, mt_error *err);
/* The same, where a bare number means bytes per second (topology files); *bare says whether it
 * had no unit. */
mt_status mt_parse_bandwidth_Bps(const char *text, double *out_Bps, int *bare, mt_error *err);
/* What to write instead of the bare number `text`, into buf: "write 100GB/s or 800Gbps (100B/s
 * for bytes per second)"; from 1e6 on, "write 2e9B/s for bytes per second (= 2GB/s = 16Gbps)". */
char *mt_bandwidth_unit_hint(const char *text, char *buf, int len);
/* The longest time any input may give, in ns: 1e6 s (11.6 days). Simulated time is int64
 * picoseconds (network/sched.h), so any such time converts exactly and a few add up safely. */
#define MT_TIME_MAX_NS 1e15

/* "20ms", "500ns", "1.5us", "2s", "700" (ns) -> nanoseconds (0 .. MT_TIME_MAX_NS). */
mt_status mt_parse_time_ns(const char *text, double *out_ns, mt_error *err);
/* "1G", "8M", "25MB", "4KiB", "1.5GB", "1024" -> bytes (>= 0). */
mt_status mt_parse_bytes(const char *text, double *out_bytes, mt_error *err);

/* Human forms into buf (returns buf): "1.00 GB", "300.0 GB/s", "12.345 ms". */
char *mt_fmt_bytes(double bytes, char *buf, int len);
char *mt_fmt_bandwidth(double Bps, char *buf, int len);
char *mt_fmt_time_ns(double ns, char *buf, int len);

/* "s" unless n is 1, for counts in messages: printf("%d GPU%s", n, mt_plural(n)). */
static inline const char *mt_plural(int64_t n) { return n == 1 ? "" : "s"; }

#endif
