/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Order statistics (stats.h).
 */
#include "config.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>

static int bc_cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x < y) ? -1 : (x > y);
}

static int bc_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;

    return (x > y) - (x < y);
}

void bc_sort_double(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), bc_cmp_double);
}

double bc_median(double *v, size_t n)
{
    if (n == 0) {
        return NAN;
    }
    bc_sort_double(v, n);
    return (n % 2) ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bc_percentile(double *v, size_t n, double pct)
{
    size_t rank;

    if (n == 0) {
        return NAN;
    }
    bc_sort_double(v, n);
    rank = (size_t)ceil(pct / 100.0 * (double)n);
    if (rank > n) {
        rank = n;
    }
    return v[(rank == 0) ? 0 : rank - 1];
}

uint64_t bc_percentile_floor_u64(uint64_t *v, size_t n, double pct)
{
    if (n == 0) {
        return 0;
    }
    qsort(v, n, sizeof(*v), bc_cmp_u64);
    return v[(size_t)((double)(n - 1) * (pct / 100.0))];
}
