/*
 * module_open.c - module_open.h: one attempt at a GPU module file, with the reason it failed.
 */
#include "kernels/module_open.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Append "what went wrong" to the list of places tried. */
static void note_failure(char *tried, size_t tried_len, const char *err)
{
    size_t len = strlen(tried);

    /* precision bounds the copy: a long error is cut, and the compiler knows it */
    snprintf(tried + len, tried_len - len, "%s%.500s", len > 0 ? "; " : "",
             err != NULL ? err : "unknown error");
}

const void *tutti__module_open(const char *path, const char *symbol, size_t min_size, int abi,
                               char *tried, size_t tried_len)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        note_failure(tried, tried_len, dlerror());
        return NULL;
    }
    const struct tutti_module_header *table = dlsym(h, symbol);
    if (table == NULL || table->size < min_size || table->abi != abi) {
        char msg[PATH_MAX + 160];
        snprintf(msg, sizeof(msg),
                 "%s: no %s of ABI %d and %zu bytes in it (another build's module)", path, symbol,
                 abi, min_size);
        note_failure(tried, tried_len, msg);
        dlclose(h);
        return NULL;
    }
    return table;
}
