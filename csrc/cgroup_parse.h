/* Parsers of the cgroup files the tree source reads (v1 and v2). Pure C, no I/O, no Python:
 * each takes a NUL-terminated buffer and returns 0 on success or -1 when the text does not
 * hold what is asked (outputs are then unspecified). */
#ifndef RT_CGROUP_PARSE_H
#define RT_CGROUP_PARSE_H

#include <stddef.h>
#include <sys/types.h>

/* The start of the line after the one p is in, or NULL at the end of the text. */
const char *parse_cgroup_next_line(const char *p);

/* The "key value" line at p (up to its newline): 0 with the key (*key, *klen: not
 * NUL-terminated) and its value, -1 when the line has another shape (no key, not one space
 * before the value, a value that is not a decimal number below 2**64, more than blanks after
 * it). */
int parse_cgroup_keyed_line(const char *p, const char **key, size_t *klen,
                            unsigned long long *value);

/* The value of the "key value" line named key (cpu.stat, memory.stat, cpuacct.stat): the first
 * such line parse_cgroup_keyed_line reads. The one parser of these files: the C readers use
 * it, and Python's through _core.cgroup_keyed. */
int parse_cgroup_keyed(const char *text, const char *key, unsigned long long *value);

/* A file holding one number (cpuacct.usage). */
int parse_cgroup_number(const char *text, unsigned long long *value);

/* v2 io.stat: rbytes and wbytes summed over the devices ("8:0 rbytes=.. wbytes=.. ..."). */
int parse_cgroup_io_stat(const char *text, unsigned long long *read_b, unsigned long long *write_b);

/* v1 blkio.throttle.io_service_bytes(_recursive): the "Read" and "Write" lines summed over the
 * devices (the "Total" lines left out). */
int parse_cgroup_blkio(const char *text, unsigned long long *read_b, unsigned long long *write_b);

/* cgroup.procs: the pids, one a line. Stores at most cap of them in out; returns how many the
 * text holds (more than cap: call again with a larger array), or -1 for a malformed line. */
long parse_cgroup_procs(const char *text, pid_t *out, size_t cap);

#endif
