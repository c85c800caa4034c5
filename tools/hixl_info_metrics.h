/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hixl_info --metrics HOST:PORT: a running engine's figures, fetched from
 * its metrics endpoint (hixl.MetricsListen) and printed readably.
 */
#ifndef HIXL_INFO_METRICS_H_
#define HIXL_INFO_METRICS_H_

/* Fetch http://HOST:PORT/metrics and print its non-zero samples; 0, or 1
 * with the reason on stderr. */
int hixl_info_metrics(const char *hostport);

#endif
