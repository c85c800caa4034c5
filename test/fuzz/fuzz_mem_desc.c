/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for the decoder of exported memory descriptions
 * (src/wire/mem_desc.c): its bytes come from a peer, through whatever
 * channel the application chose.  In `make check` it is built with
 * fuzz_replay.c and replays test/corpus/mem_desc; with clang's libFuzzer
 * it runs as `clang -fsanitize=fuzzer,address,undefined` on the same
 * corpus.
 *
 * Beyond "no crash": a description it accepts re-encodes to exactly the
 * input (one encoding per description), and every prefix of it is refused.
 */
#include "wire/mem_desc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hixl_mdesc_t d, again;
    uint8_t *out;
    size_t cut;

    if (hixl_mdesc_decode(data, size, &d) != HIXL_SUCCESS) {
        return 0;
    }
    out = malloc(size ? size : 1);
    if ((out == NULL) ||
        (hixl_mdesc_size(strlen(d.owner), d.count) != size)) {
        fprintf(stderr, "fuzz: accepted %zu bytes of another size\n", size);
        abort();
    }
    hixl_mdesc_encode(out, d.owner, d.regions, d.count);
    if (memcmp(out, data, size) != 0) {
        fprintf(stderr, "fuzz: accepted bytes do not re-encode alike\n");
        abort();
    }
    for (cut = 0; cut < size; ++cut) {
        if (hixl_mdesc_decode(data, cut, &again) == HIXL_SUCCESS) {
            fprintf(stderr, "fuzz: a %zu-byte prefix was accepted\n", cut);
            abort();
        }
    }
    free(out);
    free(d.regions);
    return 0;
}
