/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The memory-type plugin registry: modules found on disk, loaded once per
 * process and never unloaded (an engine, or the application through a
 * runtime the plugin shares with it, may hold on to them until exit).
 *
 * Search order: the directories of hixl.PluginDir / HIXL_PLUGIN_DIR
 * (':'-separated), then the installation's plugin directory
 * (hixl.PluginInstallDir / HIXL_PLUGIN_INSTALL_DIR, by default
 * $(pkglibdir); empty: none).  Every file named
 * hixl_mem_<name>.so is a candidate; the first module of a name wins.
 */
#ifndef HIXL_PLUGIN_H_
#define HIXL_PLUGIN_H_

#include "device/mem_plugin.h"

#include <limits.h>

typedef struct hixl_plugin {
    struct hixl_plugin          *next;
    char                         path[PATH_MAX];
    const hixl_mem_plugin_ops_t *ops;       /* NULL: not usable, see why */
    char                         name[32];
    char                         why[256];  /* rejected or shadowed */
} hixl_plugin_t;

/* Scan dirs (may be NULL or "") and then install_dir (the same); modules
 * seen before are not loaded again.  Never fails: problems are recorded
 * per module and shown by hixl_plugin_print. */
void hixl_plugins_scan(const char *dirs, const char *install_dir);

/* Head of the list (stable: entries are only ever appended). */
const hixl_plugin_t *hixl_plugins_first(void);

/* The directories the last scan searched, for messages. */
void hixl_plugins_searched(char *buf, size_t len);

/* The library's services offered to plugins (log, error). */
extern const hixl_mem_host_t hixl_mem_host;

/* Value for plugin `name` in a "name=value[,name=value]" list, copied
 * into buf; NULL when the list has none. */
const char *hixl_plugin_opt_lookup(const char *list, const char *name,
                                   char *buf, size_t len);

/* Whether `name` is enabled by a hixl.Plugins value ("all", "none" or a
 * ','-separated list of names). */
int hixl_plugin_enabled(const char *list, const char *name);

#endif
