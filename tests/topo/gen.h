/*
 * gen.h - synthetic machines for the topology tests: run tests/topo/gen_dgx_xml.py (python3)
 * into a fresh file under /tmp. TOPO_GEN and PYTHON3 come from tests/topo/meson.build.
 */
#ifndef TUTTI_TOPO_GEN_H
#define TUTTI_TOPO_GEN_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/**
 * Write a DGX-like XML with the generator's extra arguments `args` ("" for the default) into
 * path (at least 64 bytes). Returns 0, or -1 (the reason on stderr).
 */
static inline int topo_gen(const char *args, char *path)
{
    snprintf(path, 64, "/tmp/tutti-topo-test-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        return -1;
    }
    close(fd);
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s' '%s' %s > '%s'", PYTHON3, TOPO_GEN, args, path);
    if (system(cmd) != 0) {
        fprintf(stderr, "topo_gen: '%s' failed\n", cmd);
        unlink(path);
        return -1;
    }
    return 0;
}

#endif /* TUTTI_TOPO_GEN_H */
