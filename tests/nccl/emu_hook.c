/*
 * emu_hook.c - test only: a build of the shim with the emulated GPU of tests/integ/emu_dev.c
 * inside (libnccl-emu.so, never installed), so that a program written against NVIDIA's nccl.h
 * can drive the shim's stream path (device buffers, CUDA streams) where no GPU is. The
 * emulator is reached through nccl-prefixed names, the only ones the version script exports.
 */
#include "emu_dev.h"

#define EMU_API __attribute__((visibility("default")))

EMU_API void ncclTestEmuInstall(void)
{
    emu_dev_install();
}

EMU_API void *ncclTestEmuMalloc(size_t bytes)
{
    return emu_dev_malloc(bytes);
}

EMU_API void ncclTestEmuFree(void *dev)
{
    emu_dev_free(dev);
}

EMU_API void ncclTestEmuUpload(void *dev, const void *host, size_t bytes)
{
    emu_dev_upload(dev, host, bytes);
}

EMU_API void ncclTestEmuDownload(void *host, const void *dev, size_t bytes)
{
    emu_dev_download(host, dev, bytes);
}

EMU_API void *ncclTestEmuStreamCreate(void)
{
    return emu_stream_create();
}

EMU_API int ncclTestEmuStreamSync(void *s, int timeout_ms)
{
    return emu_stream_sync(s, timeout_ms);
}

EMU_API void ncclTestEmuStreamDestroy(void *s)
{
    emu_stream_destroy(s);
}
