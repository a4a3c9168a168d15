/* Checks csrc/stats.c without Python: percentiles by selection against a full sort on many
 * shapes of input, one table's statistics, and the recommendation's history rule.
 * Built and run by tests/core/test_core_stats_c.py (with ASan + UBSan when the compiler has
 * them). Prints one line per failed check and "ok <checks>" at the end; exit 1 on a failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup_parse.h"
#include "columns.h"
#include "float64_text.h"
#include "pid_map.h"
#include "row_rules.h"
#include "schedule.h"
#include "stats.h"

static int checks, failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

static int
cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the q-quantile by a full sort (the reference) */
static double
sorted_quantile(const double *v, size_t n, double q)
{
    double *s = malloc(n * sizeof(double)), pos = q * (double)(n - 1), r;
    size_t lo = (size_t)floor(pos), hi;

    memcpy(s, v, n * sizeof(double));
    qsort(s, n, sizeof(double), cmp);
    hi = lo + 1 < n ? lo + 1 : lo;
    r = s[lo] + (s[hi] - s[lo]) * (pos - (double)lo);
    free(s);
    return r;
}

static unsigned long long rng = 88172645463325252ULL;

static double
next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* values of one shape: 0 random, 1 few distinct, 2 ascending, 3 descending, 4 organ pipe,
 * 5 constant, 6 two values */
static void
fill(double *v, size_t n, int shape)
{
    size_t i;

    for (i = 0; i < n; i++) {
        switch (shape) {
        case 0:
            v[i] = next_random() * 1e6 - 5e5;
            break;
        case 1:
            v[i] = floor(next_random() * 4);
            break;
        case 2:
            v[i] = (double)i;
            break;
        case 3:
            v[i] = (double)(n - i);
            break;
        case 4:
            v[i] = (double)(i < n / 2 ? i : n - i);
            break;
        case 5:
            v[i] = 42.5;
            break;
        default:
            v[i] = i % 2 ? 1.0 : 0.0;
            break;
        }
    }
}

static void
check_percentiles(void)
{
    static const size_t sizes[] = {1, 2, 3, 4, 5, 10, 99, 100, 101, 1000, 4097, 86400};
    size_t si, n;
    int shape;

    for (si = 0; si < sizeof(sizes) / sizeof(*sizes); si++) {
        n = sizes[si];
        for (shape = 0; shape < 7; shape++) {
            double *v = malloc(n * sizeof(double)), *copy = malloc(n * sizeof(double));
            Summary s;
            fill(v, n, shape);
            memcpy(copy, v, n * sizeof(double));
            CHECK(summarize(v, NULL, n, NULL, &s) == 0, "summarize n=%zu", n);
            CHECK(memcmp(v, copy, n * sizeof(double)) == 0, "input untouched n=%zu", n);
            CHECK(s.p50 == sorted_quantile(v, n, 0.50), "p50 n=%zu shape=%d: %.17g vs %.17g", n,
                  shape, s.p50, sorted_quantile(v, n, 0.50));
            CHECK(s.p90 == sorted_quantile(v, n, 0.90), "p90 n=%zu shape=%d", n, shape);
            CHECK(s.p99 == sorted_quantile(v, n, 0.99), "p99 n=%zu shape=%d", n, shape);
            CHECK(s.min <= s.p50 && s.p50 <= s.p90 && s.p90 <= s.p99 && s.p99 <= s.max,
                  "order n=%zu shape=%d", n, shape);
            free(v);
            free(copy);
        }
    }
}

static void
check_weights_and_nan(void)
{
    double v[4] = {1, 2, 3, 4}, w[4] = {1, 1, 1, 5}, bad[5] = {1, NAN, 3, NAN, 2};
    Summary s;

    summarize(v, w, 4, NULL, &s);
    CHECK(fabs(s.mean - 26.0 / 8.0) < 1e-12, "time-weighted mean %g", s.mean);
    CHECK(s.sum == 10 && s.n == 4, "sum and n");
    summarize(v, NULL, 0, NULL, &s);
    CHECK(s.n == 0 && s.mean == 0 && s.p99 == 0, "empty gives zeros");
    /* NaN: no crash, no hang; whatever order it lands in */
    CHECK(summarize(bad, NULL, 5, NULL, &s) == 0, "NaN input");
}

/* a process table of n rows at 1 s: CPU ramps 0..2 cores, memory peaks at peak_kib */
static void
check_table(void)
{
    enum { N = 1000 };
    static double ts[N], cpu[N], mem[N], rd[N];
    TableColumns t;
    TableStats st;
    RunFigures run;
    size_t i;

    for (i = 0; i < N; i++) {
        ts[i] = 1000.0 + (double)i;
        cpu[i] = 2.0 * (double)i / (N - 1);
        mem[i] = i == N / 2 ? 600.0 * 1024 : 100.0 * 1024;
        rd[i] = 10;
    }
    table_columns_init(&t, process_columns, PC_COUNT);
    t.data[PC_TIMESTAMP] = ts, t.len[PC_TIMESTAMP] = N;
    t.data[PC_CPU_USAGE] = cpu, t.len[PC_CPU_USAGE] = N;
    t.data[PC_MEMORY] = mem, t.len[PC_MEMORY] = N;
    t.data[PC_READ_BYTES] = rd, t.len[PC_READ_BYTES] = N;
    CHECK(table_stats(&t, 999.0, &st) == 0, "table_stats");
    CHECK(st.rows == N && st.first_ts == 1000.0 && st.last_ts == 1000.0 + N - 1, "rows, span");
    CHECK(st.has[PC_CPU_USAGE] && fabs(st.col[PC_CPU_USAGE].mean - 1.0) < 1e-9, "cpu mean %g",
          st.col[PC_CPU_USAGE].mean);
    CHECK(st.has[PC_READ_BYTES] && st.col[PC_READ_BYTES].sum == 10.0 * N, "read sum");
    CHECK(!st.has[PC_UTIME] && !st.has[PC_GPU_VRAM], "absent or unaggregated: no summary");
    CHECK(run_duration(999.0, 0, st.first_ts, st.last_ts) == (double)N, "duration from start");
    run_figures_from_stats(&t, &st, (double)N, &run);
    CHECK(run.known[RES_CPU] && run.value[RES_CPU] == st.col[PC_CPU_USAGE].mean, "cpu figure");
    CHECK(run.known[RES_MEMORY] && run.value[RES_MEMORY] == 600.0, "memory peak in MiB: %g",
          run.value[RES_MEMORY]);
    CHECK(!run.known[RES_GPU] && !run.known[RES_VRAM], "no GPU columns: unknown");
}

static RunFigures
run_of(double cpu, double memory_mib, double gpus, double vram_mib, double duration)
{
    RunFigures r;

    memset(&r, 0, sizeof(r));
    run_figures_set(&r, &process_columns[PC_CPU_USAGE], cpu);
    run_figures_set(&r, &process_columns[PC_MEMORY], memory_mib * 1024.0); /* the column: KiB */
    run_figures_set(&r, &process_columns[PC_GPU_UTILIZED], gpus);
    run_figures_set(&r, &process_columns[PC_GPU_VRAM], vram_mib); /* the column: MiB */
    r.duration = duration;
    return r;
}

static void
check_history_rule(void)
{
    RunFigures runs[3];
    Recommendation rec;

    /* mean of the means: (3.0 + 0.2 + 1.3) / 3 = 1.5 -> 2 cores; highest of the peaks */
    runs[0] = run_of(3.0, 100, 0, 0, 60);
    runs[1] = run_of(0.2, 900, 1, 3000, 60);
    runs[2] = run_of(1.3, 300, 0.5, 100, 60);
    CHECK(recommend_runs(runs, 3, &rec) == 0, "three runs");
    CHECK(rec.cpu == 2, "cpu %d", rec.cpu);
    CHECK(rec.memory_mib == 2048, "memory %d (900 MiB + 20%% = 1080: 2 GiB)", rec.memory_mib);
    CHECK(rec.gpu == 1 && rec.vram_mib == 4096, "gpu %d vram %d", rec.gpu, rec.vram_mib);
    /* a run shorter than RECOMMEND_SHORT_RUN_S has no CPU figure; only such runs: 1 core */
    runs[0] = run_of(8.0, 100, 0, 0, 0.05);
    runs[1] = run_of(3.0, 100, 0, 0, 10);
    CHECK(recommend_runs(runs, 2, &rec) == 0 && rec.cpu == 3, "short run left out: %d", rec.cpu);
    CHECK(recommend_runs(runs, 1, &rec) == 0 && rec.cpu == 1, "only short runs: 1 core");
    /* not enough data */
    memset(runs, 0, sizeof(runs));
    CHECK(recommend_runs(runs, 1, &rec) == -1, "no figures: -1");
    CHECK(recommend_runs(runs, 0, &rec) == -1, "no runs: -1");
    /* saturation, not wrap-around */
    runs[0] = run_of(3e9, 1e30 / 1024.0, 1e12, 1.7e13, 60);
    CHECK(recommend_runs(runs, 1, &rec) == 0 && rec.cpu == 2147483647 &&
              rec.memory_mib == 2147483647 && rec.gpu == 2147483647 && rec.vram_mib == 2147483647,
          "saturates");
    /* not finite figures stay unknown */
    runs[0] = run_of(NAN, INFINITY, NAN, NAN, 60);
    CHECK(!runs[0].known[RES_CPU] && !runs[0].known[RES_MEMORY], "NaN/inf unknown");
}

/* the snapshot's column text: base64 of little-endian float64 (the expected texts are
 * Python's base64.b64encode(array('d', values).tobytes()) on a little-endian machine) */
static void
check_combine_runs(void)
{
    const double means[] = {3.0, NAN, 0.2, INFINITY, 1.3};
    const double none[] = {NAN, -INFINITY};

    CHECK(fabs(combine_runs(means, 5, 0) - 1.5) < 1e-12, "mean of the finite means");
    CHECK(combine_runs(means, 5, 1) == 3.0, "highest of the finite peaks");
    CHECK(isnan(combine_runs(none, 2, 1)) && isnan(combine_runs(means, 0, 0)), "none: NAN");
    CHECK(combine_runs(means + 2, 1, 0) == 0.2, "one run is its own figure");
}

static void
check_pid_map(void)
{
    PidMap map = {0};
    int added, i, found = 0;
    double *slot;

    CHECK(pid_map_reset(&map, 3000) == 0 && map.cap >= 6000, "room for 3000: cap %zu", map.cap);
    for (i = 0; i < 3000; i++) { /* consecutive and strided pids, each twice */
        pid_t pid = i % 2 ? i : 4096 * i;
        if ((slot = pid_map_slot(&map, pid, &added)) != NULL && added)
            *slot = i;
        if ((slot = pid_map_slot(&map, pid, &added)) != NULL && !added && *slot == i)
            found++;
    }
    CHECK(found == 3000, "each pid once, its value kept: %d", found);
    CHECK(pid_map_has(&map, 4096 * 2) && !pid_map_has(&map, 3001) && !pid_map_has(&map, -5),
          "lookups");
    CHECK(pid_map_slot(&map, -1, &added) == NULL, "a negative pid is not a key");
    CHECK(pid_map_reset(&map, 4) == 0 && map.cap == 16 && !pid_map_has(&map, 1), "reset shrinks");
    for (i = 0; i < 16; i++)
        pid_map_slot(&map, i, &added);
    CHECK(pid_map_slot(&map, 99, &added) == NULL && pid_map_has(&map, 15), "full: NULL");
    pid_map_free(&map);
}

static void
check_float64_text(void)
{
    double v[4] = {1.0, -2.5, 0.0, 1e300};
    char out[64];
    size_t n;

    CHECK(float64_b64_length(0) == 0 && float64_b64_length(1) == 12 && float64_b64_length(3) == 32,
          "lengths");
    n = float64_b64_encode(v, 1, out);
    CHECK(n == 12 && memcmp(out, "AAAAAAAA8D8=", 12) == 0, "1.0: %.*s", (int)n, out);
    n = float64_b64_encode(v, 4, out);
    CHECK(n == 44 && memcmp(out, "AAAAAAAA8D8AAAAAAAAEwAAAAAAAAAAAnHUAiDzkN34=", 44) == 0,
          "four values: %.*s", (int)n, out);
}

/* the rules of a row (row_rules.c): the CPU rate's tick floor and cap, and the fold */
static void
check_row_rules(void)
{
    double into[PC_COUNT] = {0}, add[PC_COUNT] = {0};

    CHECK(row_cpu_rate(0.5, 1.0, 0.01, 4) == 0.5, "a plain rate");
    CHECK(row_cpu_rate(0.01, 0.002, 0.01, 4) == 1.0, "over at least one tick");
    CHECK(row_cpu_rate(5.0, 1.0, 0.01, 2) == 2.0, "at most the cores");
    CHECK(row_cpu_rate(5.0, 1.0, 0.01, 0) == 5.0, "no cap when the cores are unknown");
    CHECK(row_cpu_rate(-1.0, 1.0, 0.01, 2) == 0.0 && row_cpu_rate(1.0, 0, 0.01, 2) == 0.0,
          "never negative, 0 without time");
    into[PC_TIMESTAMP] = 1, add[PC_TIMESTAMP] = 2;
    into[PC_UTIME] = 0.3, add[PC_UTIME] = 0.2, add[PC_STIME] = 0.1;
    into[PC_MEMORY] = 50, add[PC_MEMORY] = 40;
    into[PC_READ_BYTES] = 7, add[PC_READ_BYTES] = 8;
    add[PC_CPU_USAGE] = 9;
    row_fold(process_columns, PC_COUNT, into, add, 0.5, 0.01, 1);
    CHECK(into[PC_TIMESTAMP] == 2 && into[PC_MEMORY] == 50 && into[PC_READ_BYTES] == 15,
          "latest, peak, sum");
    CHECK(fabs(into[PC_CPU_USAGE] - 1.0) < 1e-12, "the rate from the summed CPU time, capped");
    add[PC_CPU_USAGE] = 0.25;
    row_fold(process_columns, PC_COUNT, into, add, 0, 0.01, 1);
    CHECK(into[PC_CPU_USAGE] == 0.25, "the later row's rate when the time is unknown");
}

/* the tick schedule (schedule.c): the grid, skipping ahead, the last partial interval */
static void
check_schedule(void)
{
    CHECK(schedule_next_tick(10, 11, 11.5, 1) == 12, "the tick after the previous one");
    CHECK(schedule_next_tick(10, 11, 14.2, 1) == 15, "late: the first tick after now");
    CHECK(schedule_next_tick(10, 11, 12.0, 1) == 13, "a tick due now has passed");
    CHECK(schedule_folds(0.2, 1, 1, 1) && !schedule_folds(0.3, 1, 1, 1), "a quarter interval");
    CHECK(schedule_folds(0.09, 0.2, 1, 1) && !schedule_folds(0.11, 0.2, 1, 1),
          "under 0.1 s whatever the interval");
    CHECK(!schedule_folds(0.01, 1, 0, 1) && !schedule_folds(0.01, 1, 1, 0),
          "no row to fold into; not the final reading");
    CHECK(schedule_takes_final(0.002, 1) && !schedule_takes_final(0.0005, 1) &&
              schedule_takes_final(0, 0),
          "the final reading: not right after the last, always when no row");
    /* the stack captures' own schedule: dense first, thinning, the ticks taking over */
    CHECK(schedule_capture_period(0, 0) == CAPTURE_DENSE_PERIOD_S &&
              schedule_capture_period(19.9, 1) == CAPTURE_DENSE_PERIOD_S,
          "a capture every 0.1 s for the first 200 of a run");
    CHECK(schedule_capture_period(100, 1) == 0.5 && schedule_capture_period(100, 0) == 0.5,
          "then one every elapsed/200 s (before any tick too)");
    CHECK(schedule_capture_period(180, 1) == 0 && schedule_capture_period(5, 0.1) == 0 &&
              schedule_capture_period(10000, 2) == 0,
          "none where the ticks are dense enough (0.9 of a tick or more)");
    CHECK(schedule_capture_period(-5, 1) == CAPTURE_DENSE_PERIOD_S &&
              schedule_capture_period(0.0 / 0.0, 1) == CAPTURE_DENSE_PERIOD_S,
          "a clock gone back or a NaN: dense, never a wait of no time");
    /* a long run's captures thin again once elapsed / CAPTURE_LONG_SAMPLES is beyond a tick */
    CHECK(schedule_serves_tick(3600, 1, 1) && schedule_serves_tick(21600, 1, 1) &&
              schedule_serves_tick(1e6, 0.1, 50),
          "every tick while elapsed / CAPTURE_LONG_SAMPLES is no more than a tick");
    CHECK(!schedule_serves_tick(43200, 1, 1) && schedule_serves_tick(43200, 2, 1) &&
              !schedule_serves_tick(86400, 3, 1) && schedule_serves_tick(86400, 4, 1),
          "then a tick at least elapsed / CAPTURE_LONG_SAMPLES after the last capture");
    CHECK(schedule_serves_tick(0.0 / 0.0, 0, 1) && schedule_serves_tick(-5, 0, 1) &&
              schedule_serves_tick(100, 0, 0),
          "a NaN, a clock gone back, no tick known yet: served");
    /* an own capture is left out while the other threads used under CAPTURE_IDLE_SHARE */
    CHECK(schedule_capture_idle(0.0, 0.1) && schedule_capture_idle(-1e-6, 0.1) &&
              schedule_capture_idle(0.0019, 0.1),
          "idle: no CPU, reads a microsecond apart, under 2 percent of a core");
    CHECK(!schedule_capture_idle(0.002, 0.1) && !schedule_capture_idle(0.05, 1.0),
          "not idle: 2 percent of a core or more");
    CHECK(!schedule_capture_idle(0.0 / 0.0, 0.1) && !schedule_capture_idle(0.0, 0.0) &&
              !schedule_capture_idle(0.0, -1.0) && !schedule_capture_idle(0.0, 0.0 / 0.0),
          "a NaN, no time elapsed, a clock gone back: captured");
}

/* the one parser of the "key value" cgroup files (cpu.stat, memory.stat; _core.cgroup_keyed) */
static void
check_cgroup_keyed(void)
{
    unsigned long long v = 0;

    CHECK(parse_cgroup_keyed("usage_usec 12\nuser_usec 5  \n", "user_usec", &v) == 0 && v == 5,
          "a value, blanks after it");
    CHECK(parse_cgroup_keyed("usage_usec_total 9\nusage_usec 3\n", "usage_usec", &v) == 0 && v == 3,
          "the whole key");
    CHECK(parse_cgroup_keyed("usage_usec 12abc\n", "usage_usec", &v) == -1, "text after it");
    CHECK(parse_cgroup_keyed("usage_usec 18446744073709551616\n", "usage_usec", &v) == -1,
          "above 2**64 - 1");
    CHECK(parse_cgroup_keyed("usage_usec\t4\n", "usage_usec", &v) == -1, "not one space");
}

int
main(void)
{
    check_float64_text();
    check_percentiles();
    check_weights_and_nan();
    check_table();
    check_history_rule();
    check_combine_runs();
    check_pid_map();
    check_row_rules();
    check_cgroup_keyed();
    check_schedule();
    if (failures) {
        printf("%d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("ok %d checks\n", checks);
    return 0;
}
