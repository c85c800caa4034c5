/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory-type plugin loader and hixl_plugin_print.
 *
 * A module is accepted when it exports HIXL_MEM_PLUGIN_ENTRY, its table
 * has this library's ABI version, is at least as large as the table this
 * library knows, has a sane name and every mandatory operation.  Anything
 * else is kept in the list with the reason, so hixl_info can show why a
 * plugin that is on disk is not used.
 */
#include "config.h"
#include "device/plugin.h"
#include "util/log.h"
#include "util/options.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t hixl_plugins_lock = PTHREAD_MUTEX_INITIALIZER;
static hixl_plugin_t  *hixl_plugins;
static char            hixl_plugins_dirs[2048];

/* ---- services for plugins ----------------------------------------------- */

static void hixl_mem_host_log(int level, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    if (level > hixl_log_level) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    hixl_log_printf((hixl_log_level_t)((level < 0) ? 0 : (level > 4) ? 4 :
                    level), "plugin", 0, "%s", msg);
}

/* A plugin's failure becomes the caller's last error. */
static hixl_status_t hixl_mem_host_error(hixl_status_t status,
                                         const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return hixl_error_at("plugin", 0, status, "%s", msg);
}

const hixl_mem_host_t hixl_mem_host = {
    .abi_version = HIXL_MEM_PLUGIN_ABI_VERSION,
    .error       = hixl_mem_host_error,
    .log         = hixl_mem_host_log,
};

/* ---- loading ------------------------------------------------------------ */

static const char *hixl_plugin_check(const hixl_mem_plugin_ops_t *ops)
{
    static char why[128];
    size_t i;

    if (ops == NULL) {
        return "its entry point returned NULL";
    }
    if (ops->abi_version != HIXL_MEM_PLUGIN_ABI_VERSION) {
        snprintf(why, sizeof(why), "plugin ABI version %u, this library "
                 "speaks %u", ops->abi_version, HIXL_MEM_PLUGIN_ABI_VERSION);
        return why;
    }
    if (ops->size < sizeof(*ops)) {
        return "its ops table is smaller than this ABI version's";
    }
    if ((ops->name == NULL) || (ops->name[0] == '\0') ||
        (strlen(ops->name) >= sizeof(((hixl_plugin_t*)0)->name))) {
        return "it has no usable name";
    }
    for (i = 0; ops->name[i] != '\0'; ++i) {
        if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789_", ops->name[i])) {
            return "its name is not [a-z0-9_]";
        }
    }
    if (!ops->probe || !ops->open || !ops->close || !ops->detect ||
        !ops->reg || !ops->dereg || !ops->unpack || !ops->import ||
        !ops->release || !ops->copy || !ops->mark || !ops->test) {
        return "a mandatory operation is missing";
    }
    return NULL;
}

/* Caller holds hixl_plugins_lock. */
static void hixl_plugin_load(const char *path)
{
    const hixl_mem_plugin_ops_t *ops = NULL;
    hixl_mem_plugin_entry_t entry;
    hixl_plugin_t *p, *q, **tail;
    const char *why;
    void *dl, *sym;

    for (tail = &hixl_plugins; *tail != NULL; tail = &(*tail)->next) {
        if (!strcmp((*tail)->path, path)) {
            return;   /* seen in an earlier scan */
        }
    }
    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return;
    }
    snprintf(p->path, sizeof(p->path), "%s", path);
    dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL) {
        snprintf(p->why, sizeof(p->why), "dlopen: %s", dlerror());
        goto add;
    }
    sym = dlsym(dl, HIXL_MEM_PLUGIN_ENTRY);
    if (sym == NULL) {
        snprintf(p->why, sizeof(p->why), "no %s symbol", HIXL_MEM_PLUGIN_ENTRY);
        dlclose(dl);
        goto add;
    }
    memcpy(&entry, &sym, sizeof(entry));
    ops = entry();
    why = hixl_plugin_check(ops);
    if (why != NULL) {
        snprintf(p->why, sizeof(p->why), "rejected: %s", why);
        dlclose(dl);
        goto add;
    }
    snprintf(p->name, sizeof(p->name), "%s", ops->name);
    for (q = hixl_plugins; q != NULL; q = q->next) {
        if ((q->ops != NULL) && !strcmp(q->name, p->name)) {
            snprintf(p->why, sizeof(p->why), "shadowed by %.200s (found first)",
                     q->path);
            dlclose(dl);
            goto add;
        }
    }
    p->ops = ops;   /* stays loaded until the process exits */
    hixl_log_debug("memory-type plugin %s loaded from %s", p->name, path);
add:
    *tail = p;
}

static int hixl_plugin_file(const struct dirent *d)
{
    return !fnmatch("hixl_mem_*.so", d->d_name, 0);
}

static void hixl_plugins_scan_dir(const char *dir)
{
    struct dirent **names;
    char path[PATH_MAX];
    int n, i;

    n = scandir(dir, &names, hixl_plugin_file, alphasort);
    if (n < 0) {
        return;   /* no such directory: nothing there */
    }
    for (i = 0; i < n; ++i) {
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
                             names[i]->d_name) < sizeof(path)) {
            hixl_plugin_load(path);
        }
        free(names[i]);
    }
    free(names);
}

void hixl_plugins_scan(const char *dirs, const char *install_dir)
{
    char list[sizeof(hixl_plugins_dirs)], *dir, *save = NULL;

    dirs        = dirs ? dirs : "";
    install_dir = install_dir ? install_dir : "";
    snprintf(list, sizeof(list), "%s%s%s", dirs,
             (*dirs && *install_dir) ? ":" : "", install_dir);
    pthread_mutex_lock(&hixl_plugins_lock);
    snprintf(hixl_plugins_dirs, sizeof(hixl_plugins_dirs), "%s", list);
    for (dir = strtok_r(list, ":", &save); dir != NULL;
         dir = strtok_r(NULL, ":", &save)) {
        hixl_plugins_scan_dir(dir);
    }
    pthread_mutex_unlock(&hixl_plugins_lock);
}

const hixl_plugin_t *hixl_plugins_first(void)
{
    const hixl_plugin_t *p;

    pthread_mutex_lock(&hixl_plugins_lock);
    p = hixl_plugins;
    pthread_mutex_unlock(&hixl_plugins_lock);
    return p;
}

void hixl_plugins_searched(char *buf, size_t len)
{
    pthread_mutex_lock(&hixl_plugins_lock);
    snprintf(buf, len, "%s", hixl_plugins_dirs[0] ? hixl_plugins_dirs :
             "(no directory)");
    pthread_mutex_unlock(&hixl_plugins_lock);
}

/* ---- option values ------------------------------------------------------ */

const char *hixl_plugin_opt_lookup(const char *list, const char *name,
                                   char *buf, size_t len)
{
    size_t nlen = strlen(name), vlen;
    const char *p = list, *end;

    while ((p != NULL) && (*p != '\0')) {
        end = strchr(p, ',');
        if (end == NULL) {
            end = p + strlen(p);
        }
        if ((strncmp(p, name, nlen) == 0) && (p[nlen] == '=')) {
            vlen = (size_t)(end - (p + nlen + 1));
            if (vlen >= len) {
                vlen = len - 1;
            }
            memcpy(buf, p + nlen + 1, vlen);
            buf[vlen] = '\0';
            return buf;
        }
        p = (*end == ',') ? end + 1 : end;
    }
    return NULL;
}

int hixl_plugin_enabled(const char *list, const char *name)
{
    size_t nlen = strlen(name);
    const char *p = list;

    if ((list == NULL) || (*list == '\0') || !strcmp(list, "all")) {
        return 1;
    }
    while ((p = strstr(p, name)) != NULL) {
        if (((p == list) || (p[-1] == ',')) &&
            ((p[nlen] == '\0') || (p[nlen] == ','))) {
            return 1;
        }
        p += nlen;
    }
    return 0;
}

/* ---- hixl_plugin_print -------------------------------------------------- */

hixl_status_t hixl_plugin_print(FILE *stream, const hixl_option_t *options,
                                size_t num_options)
{
    const hixl_plugin_t *p;
    hixl_mem_params_t params;
    hixl_mem_info_t info;
    hixl_opts_t opts;
    hixl_status_t status;
    char dirs[sizeof(hixl_plugins_dirs)], rt[512];
    int any = 0;

    if (stream == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "stream is NULL");
    }
    status = hixl_opts_load(&opts, options, num_options, NULL, NULL);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    hixl_plugins_scan(opts.plugin_dir, opts.plugin_install_dir);
    hixl_plugins_searched(dirs, sizeof(dirs));
    fprintf(stream, "# memory-type plugins (ABI %d), searched in %s:\n",
            HIXL_MEM_PLUGIN_ABI_VERSION, dirs);
    for (p = hixl_plugins_first(); p != NULL; p = p->next) {
        any = 1;
        if (p->ops == NULL) {
            fprintf(stream, "#   %-8s %s: not used: %s\n", "-", p->path,
                    p->why);
            continue;
        }
        memset(&params, 0, sizeof(params));
        params.host    = &hixl_mem_host;
        params.runtime = hixl_plugin_opt_lookup(opts.plugin_runtime, p->name,
                                                rt, sizeof(rt));
        p->ops->probe(&params, &info);
        fprintf(stream, "#   %-8s %s\n#            %s\n#            runtime "
                "%s: %s (%s)%s\n", p->name, p->path, p->ops->description,
                info.runtime_found ? "found" : "NOT found", info.runtime,
                info.detail, hixl_plugin_enabled(opts.plugins, p->name) ? "" :
                "\n#            disabled by hixl.Plugins");
    }
    if (!any) {
        fprintf(stream, "#   none: device memory registration is "
                "UNSUPPORTED\n");
    }
    return HIXL_SUCCESS;
}
