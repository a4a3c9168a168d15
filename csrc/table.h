/* A growable column store of float64 values: one row per sample. No Python here. */
#ifndef RT_TABLE_H
#define RT_TABLE_H

#include <stddef.h>

#define TABLE_MAX_COLS 32

typedef struct Table {
    size_t ncols;
    size_t nrows;
    size_t capacity;
    double *cols[TABLE_MAX_COLS];
} Table;

/* 0 on success, -1 when ncols is out of range. Allocates nothing yet. */
int table_init(Table *table, size_t ncols);

/* Appends one row of ncols values: 0 on success, -1 when out of memory (the table is unchanged).
 * A +0.0 is not written into a mapped column (its pages read as zero until written): a column
 * that stays zero (no GPU, no energy counters) holds no resident memory. */
int table_append(Table *table, const double *row);

/* Takes the last row back (none: nothing): its values are cleared, as a row never written
 * reads (table_append leaves a mapped column's +0.0 unwritten). */
void table_drop_last(Table *table);

/* Pointer to the value at (row, col); the caller checks the bounds. */
double *table_at(Table *table, size_t row, size_t col);

/* Bytes of row data held (rows in use, not the reserved capacity). */
size_t table_bytes_used(const Table *table);

void table_free(Table *table);

#endif
