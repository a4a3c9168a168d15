#include "table.h"

#include <stdlib.h>

#define TABLE_FIRST_CAPACITY 64

#if defined(__GNUC__)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define UNLIKELY(x) (x)
#endif

/* 0 on success */
int
table_init(Table *table, size_t ncols)
{
    size_t i;

    if (ncols == 0 || ncols > TABLE_MAX_COLS)
        return -1;
    table->ncols = ncols;
    table->nrows = 0;
    table->capacity = 0;
    for (i = 0; i < TABLE_MAX_COLS; i++)
        table->cols[i] = NULL;
    return 0;
}

/* The one growth path: doubles every column together; 0 on success, -1 on ENOMEM. */
static int
table_ensure_space(Table *table, size_t rows)
{
    size_t capacity, i;
    double *grown[TABLE_MAX_COLS] = {NULL};

    if (rows <= table->capacity)
        return 0;
    capacity = table->capacity ? table->capacity * 2 : TABLE_FIRST_CAPACITY;
    while (capacity < rows)
        capacity *= 2;
    for (i = 0; i < table->ncols; i++) {
        grown[i] = realloc(table->cols[i], capacity * sizeof(double));
        if (UNLIKELY(grown[i] == NULL)) {
            /* columns already grown stay valid: keep them, the capacity stays as it was */
            return -1;
        }
        table->cols[i] = grown[i];
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
        free(table->cols[i]);
        table->cols[i] = NULL;
    }
    table->nrows = table->capacity = 0;
}
