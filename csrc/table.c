#include "table.h"

#include <stdlib.h>
#include <string.h>

#include "platform.h"

#if RT_HAVE_MREMAP
#include <sys/mman.h>
#endif

/* First capacity: one 4 KiB page of float64 per column. */
#define TABLE_FIRST_CAPACITY 512

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

/* Grows one column's storage from old_cap to cap values: the new address, or NULL.
 * On Linux the columns are their own mappings, grown with mremap: no copy, and no freed
 * copies left resident in a malloc arena, so memory tracks the rows actually written.
 * Elsewhere (no mremap) realloc grows them. */
static double *
grow_column(double *col, size_t old_cap, size_t cap)
{
#if RT_HAVE_MREMAP
    void *p;
    if (col == NULL)
        p = mmap(NULL, cap * sizeof(double), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
    else
        p = mremap(col, old_cap * sizeof(double), cap * sizeof(double), MREMAP_MAYMOVE);
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
    if (col)
        munmap(col, cap * sizeof(double));
#else
    (void)cap;
    free(col);
#endif
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
    for (i = 0; i < table->ncols; i++) {
        double *grown = grow_column(table->cols[i], table->capacity, capacity);
        if (UNLIKELY(grown == NULL)) {
            /* columns 0..i-1 were grown already: take them back to the old capacity */
            while (i-- > 0) {
                double *back = NULL;
                if (table->capacity == 0) {
                    free_column(table->cols[i], capacity);
                    table->cols[i] = NULL;
                } else if ((back = grow_column(table->cols[i], capacity, table->capacity))) {
                    table->cols[i] = back;
                }
            }
            return -1;
        }
        table->cols[i] = grown;
    }
    table->capacity = capacity;
    return 0;
}

/* 0 on success, -1 when out of memory */
int
table_append(Table *table, const double *row)
{
    size_t i;

    if (UNLIKELY(table_ensure_space(table, table->nrows + 1) != 0))
        return -1;
    for (i = 0; i < table->ncols; i++)
        table->cols[i][table->nrows] = row[i];
    table->nrows++;
    return 0;
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
