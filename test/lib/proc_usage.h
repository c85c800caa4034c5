/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a process holds, as /proc shows it: memory mappings, open
 * descriptors, threads and resident memory.  A server that accepts
 * short-lived connections for weeks must hold the same after a thousand
 * of them as before: the churn test and the soak compare two readings.
 */
#ifndef HIXL_TEST_PROC_USAGE_H_
#define HIXL_TEST_PROC_USAGE_H_

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef struct proc_usage {
    long maps;      /* lines of /proc/PID/maps */
    long fds;       /* entries of /proc/PID/fd */
    long threads;   /* Threads: of /proc/PID/status */
    long rss_kb;    /* VmRSS: of /proc/PID/status, KiB */
} proc_usage_t;

static inline long proc_usage_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    long n  = 0;
    int c;

    if (f == NULL) {
        return -1;
    }
    while ((c = fgetc(f)) != EOF) {
        n += (c == '\n');
    }
    fclose(f);
    return n;
}

static inline long proc_usage_dir(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    long n = 0;

    if (d == NULL) {
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        n += (e->d_name[0] != '.');
    }
    closedir(d);
    return n;   /* the reader's own descriptor of it only when pid is us */
}

/* Read pid's usage (0: this process); 0, or -1 if pid is gone. */
static inline int proc_usage_read(pid_t pid, proc_usage_t *u)
{
    char path[64], line[256];
    FILE *f;

    memset(u, 0, sizeof(*u));
    u->threads = u->rss_kb = -1;
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    if (pid == 0) {
        snprintf(path, sizeof(path), "/proc/self/maps");
    }
    u->maps = proc_usage_lines(path);
    snprintf(path, sizeof(path), pid ? "/proc/%d/fd" : "/proc/self/fd",
             (int)pid);
    u->fds = proc_usage_dir(path);
    if ((pid == 0) && (u->fds > 0)) {
        --u->fds;   /* the directory stream proc_usage_dir had open */
    }
    snprintf(path, sizeof(path), pid ? "/proc/%d/status" : "/proc/self/status",
             (int)pid);
    f = fopen(path, "r");
    while ((f != NULL) && (fgets(line, sizeof(line), f) != NULL)) {
        if (!strncmp(line, "Threads:", 8)) {
            u->threads = atol(line + 8);
        } else if (!strncmp(line, "VmRSS:", 6)) {
            u->rss_kb = atol(line + 6);
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return ((u->maps < 0) || (u->fds < 0) || (u->threads < 0) ||
            (u->rss_kb < 0)) ? -1 : 0;
}

/* Growth from a to b, scaled to per 1,000 connections of n. */
static inline double proc_usage_per_k(long a, long b, long n)
{
    return (n > 0) ? (double)(b - a) * 1000.0 / (double)n : 0.0;
}

#endif
