/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Replays a fuzz corpus through LLVMFuzzerTestOneInput without libFuzzer,
 * so `make check` runs every input the fuzzer ever kept, with any compiler.
 * Usage: fuzz_replay DIR|FILE...  (default: $srcdir/corpus/FUZZ_CORPUS,
 * ctrl_msg unless the program is built for another target)
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef FUZZ_CORPUS
#define FUZZ_CORPUS "ctrl_msg"
#endif

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long len;

    if (f == NULL) {
        perror(path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc(len > 0 ? (size_t)len : 1);
    if ((buf == NULL) || (fread(buf, 1, (size_t)len, f) != (size_t)len)) {
        fclose(f);
        free(buf);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)len);
    free(buf);
    return 0;
}

static int replay(const char *path, unsigned *count)
{
    char child[4096];
    struct dirent *de;
    struct stat st;
    DIR *dir;

    if ((stat(path, &st) == 0) && !S_ISDIR(st.st_mode)) {
        ++*count;
        return replay_file(path);
    }
    dir = opendir(path);
    if (dir == NULL) {
        perror(path);
        return -1;
    }
    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.') {
            continue;
        }
        snprintf(child, sizeof(child), "%s/%s", path, de->d_name);
        if (replay(child, count) != 0) {
            closedir(dir);
            return -1;
        }
    }
    closedir(dir);
    return 0;
}

int main(int argc, char **argv)
{
    char def[4096];
    unsigned count = 0;
    int i;

    if (argc < 2) {
        snprintf(def, sizeof(def), "%s/fuzz/corpus/" FUZZ_CORPUS,
                 getenv("srcdir") ? getenv("srcdir") : ".");
        if (replay(def, &count) != 0) {
            return 1;
        }
    }
    for (i = 1; i < argc; ++i) {
        if (replay(argv[i], &count) != 0) {
            return 1;
        }
    }
    if (count == 0) {
        fprintf(stderr, "fuzz_replay: no corpus input found\n");
        return 1;
    }
    printf("fuzz_replay: %u inputs replayed, none crashed\n", count);
    printf("%u passed, 0 failed\n", count);
    return 0;
}
