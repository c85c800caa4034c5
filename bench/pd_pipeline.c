/*
 * bench/pd_pipeline: move a KV cache from a prefill engine to a decode
 * engine (two processes on loopback) and compare, in one run:
 *
 *   pipelined  hixl writes per layer + hixl_flush_layer per layer: decode
 *              starts on layer 0 while later layers are in flight;
 *   bulk       the same writes, one flush after the last layer: decode
 *              starts when the whole cache has landed;
 *   staged     the traditional path: copy a layer into a host staging
 *              buffer, send it over a TCP socket, receive into staging on
 *              the decode side, copy into place.
 *
 * Every byte of every mode is verified on the decode side; any mismatch
 * makes the exit status non-zero.  Transports come from UCX_TLS.
 */
#include "pd_kv.h"
#include "pd_run.h"

#include <hixl/hixl.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const struct pd_preset {
    const char *name;
    pd_shape_t  shape;
    const char *what;
} pd_presets[] = {
    {"small", {32, 8, 128, 2048, 2, 16}, "32 layers of 8 MiB, 256 MiB: "
     "finishes in seconds"},
    {"llama70b-2k", {80, 64, 128, 2048, 2, 16}, "LLaMA-70B-shaped, 2048 "
     "tokens: 80 layers of 64 MiB, 5 GiB (the size hixl's articles use)"},
    {"llama70b-4k", {80, 64, 128, 4096, 2, 16}, "4096 tokens: 10 GiB; two "
     "copies need more memory than a 24 GiB machine leaves"},
};

#define PD_NPRESETS (sizeof(pd_presets) / sizeof(pd_presets[0]))

static void pd_usage(FILE *f)
{
    size_t i;

    fprintf(f,
"Usage: pd_pipeline [options]\n"
"Moves a KV cache prefill -> decode between two local processes and compares\n"
"layer-pipelined hixl, bulk hixl and a host-staged TCP copy.\n\n"
"Shape (a preset, then any of these override it):\n"
"  --preset NAME        ");
    for (i = 0; i < PD_NPRESETS; ++i) {
        fprintf(f, "%s%s", i ? ", " : "", pd_presets[i].name);
    }
    fprintf(f, " (default small)\n"
"  --layers N  --kv-heads N  --head-dim N  --seq-len N  --dtype-bytes N\n"
"  --block-tokens N     tokens per KV block (paged layout, default 16)\n"
"Run:\n"
"  --modes LIST         comma list of pipelined,bulk,staged (default all)\n"
"  --prefill-compute-ms X  simulated prefill compute per layer (default 0)\n"
"  --decode-compute-ms X   modelled decode compute per layer (default 2)\n"
"  --timeout-ms N       per-layer wait at decode (default 60000)\n"
"  --quiet              no progress line\n"
"  --help\n"
"Presets:\n");
    for (i = 0; i < PD_NPRESETS; ++i) {
        fprintf(f, "  %-12s %s\n", pd_presets[i].name, pd_presets[i].what);
    }
    fprintf(f, "Transports: set UCX_TLS (e.g. UCX_TLS=tcp, UCX_TLS=sm).\n");
}

static int pd_parse_uint(const char *opt, const char *arg, unsigned *out)
{
    char *end;
    unsigned long v = strtoul(arg, &end, 10);

    if ((*arg == '\0') || (*end != '\0') || (v == 0) || (v > 1u << 24)) {
        fprintf(stderr, "pd_pipeline: %s needs a positive integer, got "
                "\"%s\"\n", opt, arg);
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

static int pd_parse_ms(const char *opt, const char *arg, double *out)
{
    char *end;
    double v = strtod(arg, &end);

    if ((*arg == '\0') || (*end != '\0') || (v < 0) || (v > 1e6)) {
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

static int pd_parse(int argc, char **argv, pd_config_t *cfg)
{
    enum { O_PRESET = 256, O_LAYERS, O_HEADS, O_DIM, O_SEQ, O_DTYPE, O_BLOCK,
           O_MODES, O_PCOMP, O_DCOMP, O_TIMEOUT, O_QUIET, O_HELP };
    static const struct option longopts[] = {
        {"preset", required_argument, NULL, O_PRESET},
        {"layers", required_argument, NULL, O_LAYERS},
        {"kv-heads", required_argument, NULL, O_HEADS},
        {"head-dim", required_argument, NULL, O_DIM},
        {"seq-len", required_argument, NULL, O_SEQ},
        {"dtype-bytes", required_argument, NULL, O_DTYPE},
        {"block-tokens", required_argument, NULL, O_BLOCK},
        {"modes", required_argument, NULL, O_MODES},
        {"prefill-compute-ms", required_argument, NULL, O_PCOMP},
        {"decode-compute-ms", required_argument, NULL, O_DCOMP},
        {"timeout-ms", required_argument, NULL, O_TIMEOUT},
        {"quiet", no_argument, NULL, O_QUIET},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0}};
    unsigned timeout = 60000;
    int c, rc = 0;
    size_t i;

    memset(cfg, 0, sizeof(*cfg));
    cfg->shape             = pd_presets[0].shape;
    cfg->preset            = pd_presets[0].name;
    cfg->modes             = (1u << PD_NMODES) - 1;
    cfg->decode_compute_ms = 2.0;
    while ((rc == 0) &&
           ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1)) {
        switch (c) {
        case O_PRESET:
            for (i = 0; i < PD_NPRESETS; ++i) {
                if (!strcmp(optarg, pd_presets[i].name)) {
                    break;
                }
            }
            if (i == PD_NPRESETS) {
                fprintf(stderr, "pd_pipeline: unknown preset \"%s\"\n", optarg);
                return -1;
            }
            cfg->shape  = pd_presets[i].shape;
            cfg->preset = pd_presets[i].name;
            break;
        case O_LAYERS:  rc = pd_parse_uint("--layers", optarg, &cfg->shape.layers); break;
        case O_HEADS:   rc = pd_parse_uint("--kv-heads", optarg, &cfg->shape.kv_heads); break;
        case O_DIM:     rc = pd_parse_uint("--head-dim", optarg, &cfg->shape.head_dim); break;
        case O_SEQ:     rc = pd_parse_uint("--seq-len", optarg, &cfg->shape.seq_len); break;
        case O_DTYPE:   rc = pd_parse_uint("--dtype-bytes", optarg, &cfg->shape.dtype_bytes); break;
        case O_BLOCK:   rc = pd_parse_uint("--block-tokens", optarg, &cfg->shape.block_tokens); break;
        case O_MODES:   rc = pd_parse_modes(optarg, &cfg->modes); break;
        case O_PCOMP:   rc = pd_parse_ms("--prefill-compute-ms", optarg, &cfg->prefill_compute_ms); break;
        case O_DCOMP:   rc = pd_parse_ms("--decode-compute-ms", optarg, &cfg->decode_compute_ms); break;
        case O_TIMEOUT: rc = pd_parse_uint("--timeout-ms", optarg, &timeout); break;
        case O_QUIET:   cfg->quiet = 1; break;
        case O_HELP:    pd_usage(stdout); exit(0);
        default:        return -1;
        }
    }
    if ((rc != 0) || (optind != argc)) {
        if (optind != argc) {
            fprintf(stderr, "pd_pipeline: unexpected argument \"%s\"\n",
                    argv[optind]);
        }
        return -1;
    }
    if (cfg->shape.layers > 256) {
        fprintf(stderr, "pd_pipeline: at most 256 layers (the decode engine's "
                "hixl.MaxLayers)\n");
        return -1;
    }
    cfg->timeout_ms = (int)timeout;
    return 0;
}

/* Refuse a shape that cannot fit: two copies of the cache plus staging. */
static int pd_check_memory(const pd_config_t *cfg)
{
    unsigned long long kb = 0;
    char line[256];
    double need = 2.0 * pd_cache_bytes(&cfg->shape) +
                  4.0 * pd_layer_bytes(&cfg->shape);
    FILE *f = fopen("/proc/meminfo", "r");

    while (f && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
            break;
        }
    }
    if (f) {
        fclose(f);
    }
    if ((kb != 0) && (need > kb * 1024.0 * 0.9)) {
        fprintf(stderr, "pd_pipeline: this shape needs %.1f GiB (two copies of "
                "a %.2f GiB cache plus staging) and %.1f GiB is available\n",
                need / (1 << 30), pd_cache_bytes(&cfg->shape) /
                (double)(1 << 30), kb / (double)(1 << 20));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    pd_config_t cfg;
    pd_channel_t ch;
    pid_t pid;
    int status, rc;

    if (pd_parse(argc, argv, &cfg) != 0) {
        pd_usage(stderr);
        return 2;
    }
    if (pd_check_memory(&cfg) != 0) {
        return 2;
    }
    if (pd_channel_open(&ch) != 0) {
        perror("pd_pipeline: pipe");
        return 1;
    }
    /* fork before either side touches UCX */
    pid = fork();
    if (pid < 0) {
        perror("pd_pipeline: fork");
        return 1;
    }
    if (pid == 0) {
        pd_channel_side(&ch, 1);
        _exit(pd_decode_main(&cfg, &ch));
    }
    pd_channel_side(&ch, 0);
    rc = pd_prefill_main(&cfg, &ch);
    if (rc != 0) {
        kill(pid, SIGTERM);
    }
    if ((waitpid(pid, &status, 0) == pid) &&
        (!WIFEXITED(status) || (WEXITSTATUS(status) != 0))) {
        fprintf(stderr, "pd_pipeline: decode process failed (status 0x%x)\n",
                status);
        rc = rc ? rc : 1;
    }
    return rc;
}
