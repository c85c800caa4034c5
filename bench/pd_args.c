/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench/pd_pipeline: the command line.  One option table for the three
 * forms; each option belongs to the side that owns what it sets (the KV
 * shape is decode's, the runs are prefill's), and giving one to the other
 * role is an error that says where it belongs.
 */
#include "pd_run.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct pd_preset {
    const char *name;
    pd_shape_t  shape;
    const char *what;
} pd_presets[] = {
    {"small", {32, 8, 128, 2048, 2, 16}, "32 layers of 8 MiB, 256 MiB: "
     "finishes in seconds"},
    {"llama70b-2k", {80, 64, 128, 2048, 2, 16}, "LLaMA-70B-shaped, 2048 "
     "tokens: 80 layers of 64 MiB, 5 GiB (the size hixl's articles use)"},
    {"llama70b-4k", {80, 64, 128, 4096, 2, 16}, "4096 tokens: 10 GiB; "
     "both roles on one 24 GiB host do not fit"},
};

#define PD_NPRESETS (sizeof(pd_presets) / sizeof(pd_presets[0]))

/* Which role an option belongs to. */
#define PD_FOR_DECODE  (1u << PD_ROLE_DECODE)
#define PD_FOR_PREFILL (1u << PD_ROLE_PREFILL)
#define PD_FOR_BOTH    (PD_FOR_DECODE | PD_FOR_PREFILL)

enum {
    O_PRESET = 256, O_LAYERS, O_HEADS, O_DIM, O_SEQ, O_DTYPE, O_BLOCK,
    O_LISTEN, O_STAGED_PORT, O_DCOMP, O_NO_MEMCPY,
    O_DECODE, O_NAME, O_MODES, O_PCOMP,
    O_TIMEOUT, O_PEER_WAIT, O_QUIET, O_HELP
};

static const struct option pd_longopts[] = {
    {"preset", required_argument, NULL, O_PRESET},
    {"layers", required_argument, NULL, O_LAYERS},
    {"kv-heads", required_argument, NULL, O_HEADS},
    {"head-dim", required_argument, NULL, O_DIM},
    {"seq-len", required_argument, NULL, O_SEQ},
    {"dtype-bytes", required_argument, NULL, O_DTYPE},
    {"block-tokens", required_argument, NULL, O_BLOCK},
    {"listen", required_argument, NULL, O_LISTEN},
    {"staged-port", required_argument, NULL, O_STAGED_PORT},
    {"decode-compute-ms", required_argument, NULL, O_DCOMP},
    {"no-memcpy", no_argument, NULL, O_NO_MEMCPY},
    {"decode", required_argument, NULL, O_DECODE},
    {"name", required_argument, NULL, O_NAME},
    {"modes", required_argument, NULL, O_MODES},
    {"prefill-compute-ms", required_argument, NULL, O_PCOMP},
    {"timeout-ms", required_argument, NULL, O_TIMEOUT},
    {"peer-wait-s", required_argument, NULL, O_PEER_WAIT},
    {"quiet", no_argument, NULL, O_QUIET},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0}};

static unsigned pd_option_roles(int c)
{
    if ((c >= O_PRESET) && (c <= O_NO_MEMCPY)) {
        return PD_FOR_DECODE;
    }
    if ((c >= O_DECODE) && (c <= O_PCOMP)) {
        return PD_FOR_PREFILL;
    }
    return PD_FOR_BOTH;
}

static const char *pd_option_name(int c)
{
    const struct option *o;

    for (o = pd_longopts; o->name != NULL; ++o) {
        if (o->val == c) {
            return o->name;
        }
    }
    return "?";
}

void pd_usage(FILE *f)
{
    size_t i;

    fprintf(f,
"Usage: pd_pipeline [options]                   both roles on this host\n"
"       pd_pipeline decode --listen IP:PORT [decode options]\n"
"       pd_pipeline prefill --decode IP:PORT [prefill options]\n"
"Moves a KV cache prefill -> decode and compares layer-pipelined hixl, bulk\n"
"hixl and a host-staged TCP copy; decode verifies every byte and prints the\n"
"per-layer table, beside the one-core memcpy speed of the same bytes.\n"
"Start decode first; prefill learns the KV layout from decode's engine.\n\n"
"Decode options (the KV cache it holds: a preset, then overrides):\n"
"  --listen IP:PORT     decode's engine name ([IPv6]:PORT; PORT 0: any)\n"
"  --preset NAME        ");
    for (i = 0; i < PD_NPRESETS; ++i) {
        fprintf(f, "%s%s", i ? ", " : "", pd_presets[i].name);
    }
    fprintf(f, " (default small)\n"
"  --layers N  --kv-heads N  --head-dim N  --seq-len N  --dtype-bytes N\n"
"  --block-tokens N     tokens per KV block (paged layout, default 16)\n"
"  --decode-compute-ms X   modelled decode compute per layer (default 2)\n"
"  --staged-port N      TCP port of the staged mode (default: any)\n"
"  --no-memcpy          skip measuring the memcpy limit (needs a second\n"
"                       buffer the size of the cache for a moment)\n"
"Prefill options (the runs):\n"
"  --decode IP:PORT     decode's engine name\n"
"  --name IP[:PORT]     this engine's name (default: the local address\n"
"                       that routes to decode; client-only)\n"
"  --modes LIST         comma list of pipelined,bulk,staged (default all)\n"
"  --prefill-compute-ms X  simulated prefill compute per layer (default 0)\n"
"Both:\n"
"  --timeout-ms N       bound of any one wait for the peer (default 60000)\n"
"  --peer-wait-s N      how long to wait for the peer to appear (default "
"120)\n"
"  --quiet              no progress lines\n"
"  --help\n"
"Presets:\n");
    for (i = 0; i < PD_NPRESETS; ++i) {
        fprintf(f, "  %-12s %s\n", pd_presets[i].name, pd_presets[i].what);
    }
    fprintf(f, "Transports: set UCX_TLS (and UCX_NET_DEVICES) on both sides, "
            "e.g. UCX_TLS=tcp, sm, rc.\nExit status: 0 when every byte of "
            "every run verified, 1 otherwise, 2 for a bad command line.\n");
}

static int pd_parse_uint(const char *opt, const char *arg, unsigned max,
                         unsigned *out)
{
    char *end;
    unsigned long v = strtoul(arg, &end, 10);

    if ((*arg == '\0') || (*end != '\0') || (v > max) || (arg[0] == '-')) {
        fprintf(stderr, "pd_pipeline: %s needs an integer 0..%u, got \"%s\"\n",
                opt, max, arg);
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

static int pd_parse_dim(const char *opt, const char *arg, unsigned *out)
{
    if ((pd_parse_uint(opt, arg, PD_MAX_DIM, out) != 0) || (*out == 0)) {
        fprintf(stderr, "pd_pipeline: %s must be at least 1\n", opt);
        return -1;
    }
    return 0;
}

static int pd_parse_ms(const char *opt, const char *arg, double *out)
{
    char *end;
    double v = strtod(arg, &end);

    if ((*arg == '\0') || (*end != '\0') || !(v >= 0) || (v > 1e6)) {
        fprintf(stderr, "pd_pipeline: %s needs milliseconds >= 0, got "
                "\"%s\"\n", opt, arg);
        return -1;
    }
    *out = v;
    return 0;
}

static int pd_parse_modes(const char *arg, unsigned *modes)
{
    char buf[128], *tok, *save = NULL;
    unsigned m;

    snprintf(buf, sizeof(buf), "%s", arg);
    *modes = 0;
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",",
                                                              &save)) {
        for (m = 0; m < PD_NMODES; ++m) {
            if (!strcmp(tok, pd_mode_name(m))) {
                *modes |= 1u << m;
                break;
            }
        }
        if (m == PD_NMODES) {
            fprintf(stderr, "pd_pipeline: unknown mode \"%s\"\n", tok);
            return -1;
        }
    }
    return *modes ? 0 : -1;
}

static int pd_parse_preset(const char *arg, pd_config_t *cfg)
{
    size_t i;

    for (i = 0; i < PD_NPRESETS; ++i) {
        if (!strcmp(arg, pd_presets[i].name)) {
            cfg->shape  = pd_presets[i].shape;
            cfg->preset = pd_presets[i].name;
            return 0;
        }
    }
    fprintf(stderr, "pd_pipeline: unknown preset \"%s\"\n", arg);
    return -1;
}

static int pd_parse_one(int c, const char *arg, pd_config_t *cfg)
{
    unsigned v;
    int rc;

    switch (c) {
    case O_PRESET:      return pd_parse_preset(arg, cfg);
    case O_LAYERS:      return pd_parse_dim("--layers", arg, &cfg->shape.layers);
    case O_HEADS:       return pd_parse_dim("--kv-heads", arg, &cfg->shape.kv_heads);
    case O_DIM:         return pd_parse_dim("--head-dim", arg, &cfg->shape.head_dim);
    case O_SEQ:         return pd_parse_dim("--seq-len", arg, &cfg->shape.seq_len);
    case O_DTYPE:       return pd_parse_dim("--dtype-bytes", arg, &cfg->shape.dtype_bytes);
    case O_BLOCK:       return pd_parse_dim("--block-tokens", arg, &cfg->shape.block_tokens);
    case O_LISTEN:      cfg->listen = arg; return 0;
    case O_STAGED_PORT: return pd_parse_uint("--staged-port", arg, 65535, &cfg->staged_port);
    case O_DCOMP:       return pd_parse_ms("--decode-compute-ms", arg, &cfg->decode_compute_ms);
    case O_NO_MEMCPY:   cfg->no_memcpy = 1; return 0;
    case O_DECODE:      cfg->decode = arg; return 0;
    case O_NAME:        cfg->name = arg; return 0;
    case O_MODES:       return pd_parse_modes(arg, &cfg->modes);
    case O_PCOMP:       return pd_parse_ms("--prefill-compute-ms", arg, &cfg->prefill_compute_ms);
    case O_QUIET:       cfg->quiet = 1; return 0;
    case O_TIMEOUT:
        rc = pd_parse_uint("--timeout-ms", arg, 86400000, &v);
        cfg->timeout_ms = (int)v;
        return ((rc == 0) && (v > 0)) ? 0 : -1;
    case O_PEER_WAIT:
        rc = pd_parse_uint("--peer-wait-s", arg, 86400, &v);
        cfg->peer_wait_ms = (int)v * 1000;
        return rc;
    }
    return -1;
}

/* What the shape must satisfy for decode to describe it in one LAYOUT. */
static int pd_check_shape(const pd_shape_t *s)
{
    if (s->layers > PD_MAX_LAYERS) {
        fprintf(stderr, "pd_pipeline: at most %u layers (the decode engine's "
                "hixl.MaxLayers)\n", PD_MAX_LAYERS);
        return -1;
    }
    if (pd_blocks_per_layer(s) > PD_MAX_BLOCKS) {
        fprintf(stderr, "pd_pipeline: %zu blocks per layer, at most %u: "
                "raise --block-tokens\n", pd_blocks_per_layer(s),
                PD_MAX_BLOCKS);
        return -1;
    }
    return 0;
}

static int pd_check_role(const pd_config_t *cfg)
{
    if ((cfg->role == PD_ROLE_DECODE) && (cfg->listen == NULL)) {
        fprintf(stderr, "pd_pipeline decode: --listen IP:PORT is required\n");
        return -1;
    }
    if ((cfg->role == PD_ROLE_PREFILL) && (cfg->decode == NULL)) {
        fprintf(stderr, "pd_pipeline prefill: --decode IP:PORT is required\n");
        return -1;
    }
    if ((cfg->role == PD_ROLE_LOOPBACK) &&
        (cfg->listen || cfg->decode || cfg->name || cfg->staged_port)) {
        fprintf(stderr, "pd_pipeline: --listen, --staged-port, --decode and "
                "--name belong to the two-role form (pd_pipeline decode ... "
                "/ pd_pipeline prefill ...)\n");
        return -1;
    }
    return (cfg->role == PD_ROLE_PREFILL) ? 0 : pd_check_shape(&cfg->shape);
}

int pd_parse(int argc, char **argv, pd_config_t *cfg)
{
    static const char *const role_names[] = {"", "decode", "prefill"};
    unsigned allowed;
    int c;

    memset(cfg, 0, sizeof(*cfg));
    cfg->role = PD_ROLE_LOOPBACK;
    if ((argc > 1) && !strcmp(argv[1], "decode")) {
        cfg->role = PD_ROLE_DECODE;
    } else if ((argc > 1) && !strcmp(argv[1], "prefill")) {
        cfg->role = PD_ROLE_PREFILL;
    }
    if (cfg->role != PD_ROLE_LOOPBACK) {   /* getopt sees "decode" as argv[0] */
        argc--;
        argv++;
    }
    allowed = (cfg->role == PD_ROLE_LOOPBACK) ? PD_FOR_BOTH :
              (1u << cfg->role);
    cfg->shape             = pd_presets[0].shape;
    cfg->preset            = pd_presets[0].name;
    cfg->modes             = (1u << PD_NMODES) - 1;
    cfg->decode_compute_ms = 2.0;
    cfg->timeout_ms        = 60000;
    cfg->peer_wait_ms      = 120000;
    cfg->name_fd           = -1;
    while ((c = getopt_long(argc, argv, "", pd_longopts, NULL)) != -1) {
        if (c == O_HELP) {
            pd_usage(stdout);
            exit(0);
        }
        if ((c == '?') || (c == ':')) {
            return -1;
        }
        if (!(pd_option_roles(c) & allowed)) {
            fprintf(stderr, "pd_pipeline %s: --%s is a %s option (%s)\n",
                    role_names[cfg->role], pd_option_name(c),
                    (pd_option_roles(c) == PD_FOR_DECODE) ? "decode" :
                    "prefill", (pd_option_roles(c) == PD_FOR_DECODE) ?
                    "decode owns the KV cache; prefill learns its shape from "
                    "it" : "prefill runs the transfers");
            return -1;
        }
        if (pd_parse_one(c, optarg, cfg) != 0) {
            return -1;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "pd_pipeline: unexpected argument \"%s\"\n",
                argv[optind]);
        return -1;
    }
    return pd_check_role(cfg);
}
