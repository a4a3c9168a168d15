#include "table.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "platform.h"

#if RT_HAVE_MREMAP
#include <sys/mman.h>
#endif

/* A table's first rows live in one small malloc'd block per column: a short run holds 512 B
 * a column, not a page. From TABLE_FIRST_MAPPED rows on (one 4 KiB page of float64), each
 * column is a mapping of its own, grown with mremap (Linux). */
#define TABLE_FIRST_CAPACITY 64
#define TABLE_FIRST_MAPPED 512

#if defined(__GNUC__)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define UNLIKELY(x) (x)
#endif

/* 0 on success */
int
table_init(Table *table, size_t ncols)
{
    if (ncols == 0 || ncols > TABLE_MAX_COLS)
        return -1;
    memset(table, 0, sizeof(*table));
    table->ncols = ncols;
    return 0;
}

/* A new column of cap values: a mapping from TABLE_FIRST_MAPPED values on (Linux), else
 * malloc'd; NULL when out of memory. */
static double *
new_column(size_t cap)
{
#if RT_HAVE_MREMAP
    if (cap >= TABLE_FIRST_MAPPED) {
        void *p = mmap(NULL, cap * sizeof(double), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
#endif
    return malloc(cap * sizeof(double));
}

/* Grows one column's storage from old_cap to cap values: the new address, or NULL.
 * On Linux a mapped column grows with mremap: no copy, and no freed copies left resident in
 * a malloc arena, so memory tracks the rows actually written. Elsewhere realloc grows it. */
static double *
grow_column(double *col, size_t old_cap, size_t cap)
{
#if RT_HAVE_MREMAP
    void *p = mremap(col, old_cap * sizeof(double), cap * sizeof(double), MREMAP_MAYMOVE);
    return p == MAP_FAILED ? NULL : p;
#else
    (void)old_cap;
    return realloc(col, cap * sizeof(double));
#endif
}

static void
free_column(double *col, size_t cap)
{
#if RT_HAVE_MREMAP
    if (col && cap >= TABLE_FIRST_MAPPED) {
        munmap(col, cap * sizeof(double));
        return;
    }
#else
    (void)cap;
#endif
    free(col);
}

/* Every column moved to new storage of cap values (the first rows, or the step from the
 * small blocks to mappings): all allocated first, so on ENOMEM the table is unchanged.
 * 0 on success, -1 on ENOMEM. */
static int
table_move_columns(Table *table, size_t cap)
{
    double *fresh[TABLE_MAX_COLS];
    size_t i;

    for (i = 0; i < table->ncols; i++) {
        fresh[i] = new_column(cap);
        if (UNLIKELY(fresh[i] == NULL)) {
            while (i-- > 0)
                free_column(fresh[i], cap);
            return -1;
        }
    }
    for (i = 0; i < table->ncols; i++) {
        if (table->cols[i]) {
            memcpy(fresh[i], table->cols[i], table->nrows * sizeof(double));
            free_column(table->cols[i], table->capacity);
        }
        table->cols[i] = fresh[i];
    }
    table->capacity = cap;
    return 0;
}

/* The one growth path: doubles every column together; 0 on success, -1 on ENOMEM. */
static int
table_ensure_space(Table *table, size_t rows)
{
    size_t capacity, i;

    if (rows <= table->capacity)
        return 0;
    capacity = table->capacity ? table->capacity * 2 : TABLE_FIRST_CAPACITY;
    while (capacity < rows)
        capacity *= 2;
    if (table->capacity == 0)
        return table_move_columns(table, capacity);
#if RT_HAVE_MREMAP
    if (table->capacity < TABLE_FIRST_MAPPED) /* from the small blocks to mappings */
        return table_move_columns(table,
                                  capacity < TABLE_FIRST_MAPPED ? TABLE_FIRST_MAPPED : capacity);
#endif
    for (i = 0; i < table->ncols; i++) {
        double *grown = grow_column(table->cols[i], table->capacity, capacity);
        if (UNLIKELY(grown == NULL)) {
            /* columns 0..i-1 were grown already: take them back to the old capacity */
            while (i-- > 0) {
                double *back = grow_column(table->cols[i], capacity, table->capacity);
                if (back)
                    table->cols[i] = back;
            }
            return -1;
        }
        table->cols[i] = grown;
    }
    table->capacity = capacity;
    return 0;
}

/* 1 when value is +0.0 (all bits zero), what an untouched page of a mapping reads */
static int
is_plus_zero(double value)
{
    uint64_t bits;

    memcpy(&bits, &value, sizeof(bits));
    return bits == 0;
}

/* 0 on success, -1 when out of memory */
int
table_append(Table *table, const double *row)
{
    size_t i;
    int mapped;

    if (UNLIKELY(table_ensure_space(table, table->nrows + 1) != 0))
        return -1;
#if RT_HAVE_MREMAP
    mapped = table->capacity >= TABLE_FIRST_MAPPED;
#else
    mapped = 0;
#endif
    for (i = 0; i < table->ncols; i++)
        if (!mapped || !is_plus_zero(row[i]))
            table->cols[i][table->nrows] = row[i];
    table->nrows++;
    return 0;
}

void
table_drop_last(Table *table)
{
    size_t i;

    if (table->nrows == 0)
        return;
    table->nrows--;
    for (i = 0; i < table->ncols; i++)
        table->cols[i][table->nrows] = 0.0;
}

/* address of one value */
double *
table_at(Table *table, size_t row, size_t col)
{
    return &table->cols[col][row];
}

/* bytes of row data in use */
size_t
table_bytes_used(const Table *table)
{
    return table->nrows * table->ncols * sizeof(double);
}

void
table_free(Table *table)
{
    size_t i;

    for (i = 0; i < TABLE_MAX_COLS; i++) {
        free_column(table->cols[i], table->capacity);
        table->cols[i] = NULL;
    }
    table->nrows = table->capacity = 0;
}
