/*
 * rd: the reader scripts/bench.sh times. One program for the mount and for
 * the reference, so both sides issue the same system calls with the same
 * request size.
 *
 *   rd seq  PATH OFFSET LENGTH BS   read LENGTH bytes from OFFSET with read(2)
 *                                   of BS bytes (LENGTH -1: to end of file)
 *   rd rand PATH N BS SEED          N preads of BS bytes at BS-aligned
 *                                   pseudo-random offsets, each timed
 *   rd many LIST BS                 read every file named in LIST (one path
 *                                   a line) to its end, BS bytes a read
 *   rd npload LIST PY               make, for every small .npy file named in
 *                                   LIST, the system calls np.load makes of
 *                                   it (numpy 1.24) under Python PY: 311
 *                                   (open() asks isatty: the TCGETS ioctl)
 *                                   or 314 (it asks no isatty of a regular
 *                                   file, gh-90102), each file timed
 *
 * Output is one line of key=value pairs on stdout; times in seconds or ms
 * (seq also reports the reader's own CPU time, usr and sys, in seconds).
 * Exit status 1 on any I/O error or short read, with the reason on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *xalloc(size_t n) {
	void *p = NULL;
	if (posix_memalign(&p, 4096, n) != 0) {
		fprintf(stderr, "rd: out of memory\n");
		exit(1);
	}
	memset(p, 0, n); /* fault the buffer in before any timing */
	return p;
}

static int cmp_double(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int do_seq(const char *path, long long off, long long len, size_t bs) {
	char *buf = xalloc(bs);
	double t0 = now();
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "rd: open %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (len < 0) {
		struct stat st;
		if (fstat(fd, &st) != 0) {
			fprintf(stderr, "rd: fstat %s: %s\n", path, strerror(errno));
			return 1;
		}
		len = st.st_size - off;
	}
	if (off > 0 && lseek(fd, off, SEEK_SET) != off) {
		fprintf(stderr, "rd: lseek %s: %s\n", path, strerror(errno));
		return 1;
	}
	long long done = 0, calls = 0;
	while (done < len) {
		size_t want = bs;
		if ((long long)want > len - done)
			want = (size_t)(len - done);
		ssize_t n = read(fd, buf, want);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "rd: read %s at %lld: %s\n", path, off + done, strerror(errno));
			return 1;
		}
		if (n == 0) {
			fprintf(stderr, "rd: %s: end of file after %lld of %lld bytes\n", path, done, len);
			return 1;
		}
		done += n;
		calls++;
	}
	close(fd);
	double secs = now() - t0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("bytes=%lld secs=%.6f mbps=%.1f calls=%lld usr=%.3f sys=%.3f\n", done, secs, done / secs / 1048576.0, calls,
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6, ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	return 0;
}

static uint64_t rng_state;
static uint64_t rng_next(void) { /* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int do_rand(const char *path, long n, size_t bs, uint64_t seed) {
	char *buf = xalloc(bs);
	double *ms = calloc(n, sizeof *ms);
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "rd: open %s: %s\n", path, strerror(errno));
		return 1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)bs) {
		fprintf(stderr, "rd: %s: cannot stat or smaller than %zu bytes\n", path, bs);
		return 1;
	}
	long long slots = st.st_size / bs;
	rng_state = seed;
	double total0 = now();
	for (long i = 0; i < n; i++) {
		long long off = (long long)(rng_next() % slots) * bs;
		double t0 = now();
		ssize_t got = pread(fd, buf, bs, off);
		ms[i] = (now() - t0) * 1e3;
		if (got != (ssize_t)bs) {
			fprintf(stderr, "rd: pread %s at %lld: %s\n", path, off,
			        got < 0 ? strerror(errno) : "short read");
			return 1;
		}
	}
	double total = now() - total0;
	close(fd);
	double first = ms[0], sum = 0;
	for (long i = 0; i < n; i++)
		sum += ms[i];
	qsort(ms, n, sizeof *ms, cmp_double);
#define PCT(p) ms[(long)((p) * (n - 1) + 0.5)]
	printf("n=%ld first_ms=%.3f median_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f mean_ms=%.3f secs=%.6f\n",
	       n, first, PCT(0.5), PCT(0.9), PCT(0.99), ms[n - 1], sum / n, total);
	return 0;
}

/* read_list reads the paths of the file list, one a line, before any
 * timing; NULL when it cannot be read. */
static char **read_list(const char *list, size_t *count) {
	FILE *f = fopen(list, "r");
	if (!f) {
		fprintf(stderr, "rd: open %s: %s\n", list, strerror(errno));
		return NULL;
	}
	size_t cap = 1024;
	char **paths = malloc(cap * sizeof *paths);
	char line[4096];
	*count = 0;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		if (!line[0])
			continue;
		if (*count == cap)
			paths = realloc(paths, (cap *= 2) * sizeof *paths);
		paths[(*count)++] = strdup(line);
	}
	fclose(f);
	return paths;
}

static int do_many(const char *list, size_t bs) {
	size_t count = 0;
	char **paths = read_list(list, &count);
	if (paths == NULL)
		return 1;
	char *buf = xalloc(bs);
	long long bytes = 0;
	double t0 = now();
	for (size_t i = 0; i < count; i++) {
		int fd = open(paths[i], O_RDONLY);
		if (fd < 0) {
			fprintf(stderr, "rd: open %s: %s\n", paths[i], strerror(errno));
			return 1;
		}
		for (;;) {
			ssize_t n = read(fd, buf, bs);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				fprintf(stderr, "rd: read %s: %s\n", paths[i], strerror(errno));
				return 1;
			}
			if (n == 0)
				break;
			bytes += n;
		}
		close(fd);
	}
	double secs = now() - t0;
	printf("files=%zu bytes=%lld secs=%.6f us_per_file=%.1f\n", count, bytes, secs, secs * 1e6 / (count ? count : 1));
	return 0;
}

/* npload makes the system calls of np.load(path) of a small .npy file,
 * as strace shows them for Python 3.11 and numpy 1.24: Python's open()
 * (open, fstat, isatty's ioctl, the buffer's tell), its read of the
 * magic, then numpy's own reading through a duplicate of the descriptor.
 * Python 3.14 makes no ioctl (isatty of a regular file is answered from
 * the fstat made at the open). Returns the bytes read, or -1. */
static long long npload(const char *path, char *buf, int py) {
	struct stat st;
	struct termios t;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0)
		return -1;
	if (py < 314 && ioctl(fd, TCGETS, &t) == 0) {
		close(fd);
		return -1; /* a terminal */
	}
	lseek(fd, 0, SEEK_CUR);
	ssize_t n = read(fd, buf, 4096);
	int fd2 = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (n < 0 || fd2 < 0)
		return -1;
	fcntl(fd2, F_GETFL);
	lseek(fd2, 0, SEEK_CUR);
	lseek(fd, 0, SEEK_CUR);
	fstat(fd2, &st);
	lseek(fd2, 0, SEEK_SET);
	ssize_t h = read(fd2, buf, 128);
	lseek(fd2, 0, SEEK_SET);
	ssize_t m = read(fd2, buf, 4096);
	close(fd2);
	lseek(fd, n, SEEK_SET);
	close(fd);
	return h < 0 || m < 0 ? -1 : n + h + m;
}

static int do_npload(const char *list, int py) {
	size_t count = 0;
	char **paths = read_list(list, &count);
	if (paths == NULL)
		return 1;
	char *buf = xalloc(4096);
	double *us = malloc((count ? count : 1) * sizeof *us), sum = 0;
	long long bytes = 0;
	for (size_t i = 0; i < count; i++) {
		double t0 = now();
		long long n = npload(paths[i], buf, py);
		us[i] = (now() - t0) * 1e6;
		if (n < 0) {
			fprintf(stderr, "rd: np.load's system calls on %s: %s\n", paths[i], strerror(errno));
			return 1;
		}
		bytes += n;
		sum += us[i];
	}
	qsort(us, count, sizeof *us, cmp_double);
	printf("files=%zu bytes=%lld py=%d us_per_file=%.1f median_us=%.1f\n", count, bytes, py,
	       sum / (count ? count : 1), count ? us[count / 2] : 0);
	return 0;
}

int main(int argc, char **argv) {
	if (argc == 6 && strcmp(argv[1], "seq") == 0)
		return do_seq(argv[2], atoll(argv[3]), atoll(argv[4]), (size_t)atoll(argv[5]));
	if (argc == 6 && strcmp(argv[1], "rand") == 0)
		return do_rand(argv[2], atol(argv[3]), (size_t)atoll(argv[4]), strtoull(argv[5], NULL, 10));
	if (argc == 4 && strcmp(argv[1], "many") == 0)
		return do_many(argv[2], (size_t)atoll(argv[3]));
	if (argc == 4 && strcmp(argv[1], "npload") == 0 && (atoi(argv[3]) == 311 || atoi(argv[3]) == 314))
		return do_npload(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: rd seq PATH OFFSET LENGTH BS | rd rand PATH N BS SEED | rd many LIST BS | rd npload LIST 311|314\n");
	return 2;
}
