/* The C checks' one assertion. CHECK(cond) counts the check (`checks`, printed by the program
 * at its end) and, when cond is false, names it (file:line: expression), runs CHECK_CLEANUP()
 * (the program's own clean-up of the processes it made: define it before including this; none
 * by default) and exits 1. */
#ifndef RT_TEST_CHECK_H
#define RT_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int checks;

#ifndef CHECK_CLEANUP
#define CHECK_CLEANUP() ((void)0)
#endif

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);                             \
            CHECK_CLEANUP();                                                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#endif
