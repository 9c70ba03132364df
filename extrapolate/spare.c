/* extrapolate/spare.c — see spare.h. */
#include "extrapolate/spare.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *arr[MT_SPARE_MAX];
static size_t size[MT_SPARE_MAX], total;
static int n;

void mt_spare_put(void *p) {
    if (!p) return;
    size_t b = malloc_usable_size(p);
    pthread_mutex_lock(&mu);
    int kept = n < MT_SPARE_MAX && total + b <= MT_SPARE_BYTES;
    if (kept) {
        arr[n] = p;
        size[n++] = b;
        total += b;
    }
    pthread_mutex_unlock(&mu);
    if (!kept) free(p);
}

void *mt_spare_take(size_t bytes, int64_t *cap, size_t elem) {
    void *p = NULL;
    pthread_mutex_lock(&mu);
    int best = -1;
    for (int i = 0; i < n; i++) {
        int fits = size[i] >= bytes, best_fits = best >= 0 && size[best] >= bytes;
        if (best < 0 || (fits && (!best_fits || size[i] < size[best])) || (!fits && !best_fits && size[i] > size[best]))
            best = i;
    }
    if (best >= 0) {
        p = arr[best];
        *cap = (int64_t)(size[best] / elem);
        total -= size[best];
        arr[best] = arr[--n];
        size[best] = size[n];
    }
    pthread_mutex_unlock(&mu);
    return p;
}
