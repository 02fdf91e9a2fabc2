/*
 * fake_cudart.c - a stand-in for the shared CUDA runtime with one device, for the test of
 * libtutti-one-gpu.so (one_gpu.c): it records the device ordinals it is given, so the test
 * sees what the interposer passed on.
 */
int fake_last_device = -1;

int cudaGetDeviceCount(int *count)
{
    *count = 1;
    return 0;
}

int cudaSetDevice(int device)
{
    fake_last_device = device;
    return device == 0 ? 0 : 101; /* cudaErrorInvalidDevice */
}

int cudaGetDeviceProperties_v2(void *prop, int device)
{
    (void)prop;
    fake_last_device = device;
    return device == 0 ? 0 : 101;
}

int cudaDeviceGetAttribute(int *value, int attr, int device)
{
    *value = attr;
    fake_last_device = device;
    return device == 0 ? 0 : 101;
}
