/*
 * emu_train_module.h - tutti-train's GPU module on the emulated GPU of tests/integ/emu_dev.h
 * (emu_train_module.c), for the trainer's tests without a GPU.
 */
#ifndef TRAIN_TESTS_EMU_TRAIN_MODULE_H
#define TRAIN_TESTS_EMU_TRAIN_MODULE_H

#include "cuda/train_cuda.h"

/** The table: install it with train_cuda_install, and emu_dev_install for tutti. */
extern const struct train_cuda_module emu_train_module;

#endif /* TRAIN_TESTS_EMU_TRAIN_MODULE_H */
