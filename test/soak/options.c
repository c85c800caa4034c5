/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak: the configuration, from the command line.
 */
#include "soak.h"

/* ---- configuration, shared by parent and children ------------------------- */

cfg_t g_cfg;

/*
 * What e0 may grow by over the churn, absolute (the long-lived traffic
 * beside it moves e0's heap and UCX's pools): 16 mappings, 4 descriptors,
 * no thread, 8 MiB.  Over 10,000 connections a leak of one mapping or
 * descriptor per 1,000, or of 1 KiB per connection, is outside it.
 */
const churn_slack_t soak_churn_slack = {16, 4, 0, 8192};

static void usage(FILE *f)
{
    fprintf(f,
        "usage: soak [-t SECONDS] [-n ENGINES] [-s SEED] [-k SLOTS] "
        "[-r RSS_MIB] [-w WARMUP] [-q]\n"
        "  -t  how long the engines write (default 60 s)\n"
        "  -n  engine processes, 2..%d (default 3)\n"
        "  -s  seed of sizes, layouts and patterns (default: from the time)\n"
        "  -k  slots per sender in each receive ring, 1..%d (default 4)\n"
        "  -r  largest RSS growth of an engine after warm-up, MiB "
        "(default 64)\n"
        "  -w  warm-up, s (default a sixth of -t, at most 10)\n"
        "  -c  short-lived clients of e0 (default: as many as fit in -t)\n"
        "  -q  only the summary\n"
        "UCX_TLS is taken from the environment.\n", MAX_ENGINES, MAX_SLOTS);
}

static unsigned long parse_num(const char *s, const char *what)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 0);
    if ((errno != 0) || (*s == '\0') || (*end != '\0')) {
        fprintf(stderr, "soak: bad %s \"%s\"\n", what, s);
        usage(stderr);
        exit(2);
    }
    return v;
}

int soak_options(int argc, char **argv)
{
    int opt;

    g_cfg.seconds   = 60;
    g_cfg.engines   = 3;
    g_cfg.slots     = 4;
    g_cfg.warmup    = (unsigned)-1;
    g_cfg.rss_limit = 64ull << 20;
    g_cfg.seed      = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    while ((opt = getopt(argc, argv, "t:n:s:k:r:w:c:qh")) != -1) {
        switch (opt) {
        case 't': g_cfg.seconds = (unsigned)parse_num(optarg, "seconds"); break;
        case 'n': g_cfg.engines = (unsigned)parse_num(optarg, "engines"); break;
        case 's': g_cfg.seed    = parse_num(optarg, "seed"); break;
        case 'k': g_cfg.slots   = (unsigned)parse_num(optarg, "slots"); break;
        case 'r': g_cfg.rss_limit = (uint64_t)parse_num(optarg, "RSS MiB") << 20;
                  break;
        case 'w': g_cfg.warmup  = (unsigned)parse_num(optarg, "warm-up"); break;
        case 'c': g_cfg.churn   = (unsigned)parse_num(optarg, "churn"); break;
        case 'q': g_cfg.quiet   = 1; break;
        case 'h': usage(stdout); return 0;
        default:  usage(stderr); return 2;
        }
    }
    if ((optind != argc) || (g_cfg.engines < 2) ||
        (g_cfg.engines > MAX_ENGINES) || (g_cfg.slots < 1) ||
        (g_cfg.slots > MAX_SLOTS) || (g_cfg.seconds < 1)) {
        usage(stderr);
        return 2;
    }
    if (g_cfg.warmup == (unsigned)-1) {
        g_cfg.warmup = g_cfg.seconds / 6;
        if (g_cfg.warmup > 10) {
            g_cfg.warmup = 10;
        }
    }
    return -1;
}
