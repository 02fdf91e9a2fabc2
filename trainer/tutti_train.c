/*
 * tutti_train.c - the main of tutti-train: everything is train_main (train_main.c), which the
 * trainer's emulated-GPU test program (tests/train_emu_main.c) runs too.
 */
#include "train.h"

int main(int argc, char **argv)
{
    return train_main(argc, argv);
}
