/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bc_which (which.h).
 */
#include "config.h"
#include "which.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *bc_which(const char *prog)
{
    static char path[512];
    const char *p = getenv("PATH"), *end;

    while ((p != NULL) && (*p != '\0')) {
        end = strchr(p, ':');
        snprintf(path, sizeof(path), "%.*s/%s",
                 (int)(end ? (size_t)(end - p) : strlen(p)), p, prog);
        if (access(path, X_OK) == 0) {
            return path;
        }
        p = end ? end + 1 : NULL;
    }
    return NULL;
}
