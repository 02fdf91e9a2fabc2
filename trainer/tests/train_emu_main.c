/*
 * train_emu_main.c - tutti-train-emu: tutti-train with an emulated GPU in place of CUDA, for
 * the tests: tutti's stream path runs on tests/integ/emu_dev.c and --device cuda on the
 * module of emu_train_module.c, so the trainer's GPU path runs end to end without a GPU.
 * Installed in the parent, before the ranks fork (they inherit both).
 */
#include "emu_dev.h"
#include "emu_train_module.h"
#include "train.h"

int main(int argc, char **argv)
{
    emu_dev_install();
    train_cuda_install(&emu_train_module);
    return train_main(argc, argv);
}
