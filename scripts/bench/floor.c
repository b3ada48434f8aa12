/*
 * floor: the least a FUSE daemon can do to serve np.load of small files,
 * for scripts/bench.sh to set beside npzfs. It serves one flat local folder
 * read-only, the way npzfs serves a small array, and does nothing else:
 *
 *   - names are found by a binary search of the folder's sorted listing,
 *     read once at start; entries and attributes never time out;
 *   - opens answer ENOSYS, so that the kernel opens files without asking
 *     and keeps their page cache (FUSE's no-open mode);
 *   - an ioctl (Python's open() asks isatty of every file) first stores the
 *     whole file in the kernel's page cache (FUSE_NOTIFY_STORE), then
 *     answers ENOSYS, so that the reads which follow make no request;
 *   - reads, where they still come, are preads of the file.
 *
 * One thread, libfuse's own loop: the fastest for one reader at a time.
 * What np.load through it costs beyond a local file is the round trips
 * FUSE itself makes, on this machine; what npzfs costs beyond it is
 * npzfs's own.
 *
 *   floor DIR MOUNTPOINT     mounts, serves until unmounted (fusermount3 -u)
 *
 * Files larger than 128 KiB are not pushed; nothing under DIR may change
 * while mounted.
 */
#define FUSE_USE_VERSION 34
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PUSH_MAX (128 << 10)
#define FOREVER 1e9

static struct fuse_session *se;
static int dirfd_;
static char **names;  /* sorted; node i + 2 is names[i]; node 1 the root */
static int *fds;      /* each file's descriptor, opened at first use */
static size_t count;

static int byname(const void *a, const void *b) {
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load(const char *dir) {
	DIR *d = opendir(dir);
	if (d == NULL)
		return -1;
	size_t cap = 1024;
	names = malloc(cap * sizeof *names);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (count == cap)
			names = realloc(names, (cap *= 2) * sizeof *names);
		names[count++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, count, sizeof *names, byname);
	fds = malloc((count ? count : 1) * sizeof *fds);
	for (size_t i = 0; i < count; i++)
		fds[i] = -1;
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY);
	return dirfd_ < 0 ? -1 : 0;
}

/* fd gives node ino's open descriptor, or -1. */
static int fd(fuse_ino_t ino) {
	size_t i = ino - 2;
	if (ino < 2 || i >= count)
		return -1;
	if (fds[i] < 0)
		fds[i] = openat(dirfd_, names[i], O_RDONLY);
	return fds[i];
}

static int attr(fuse_ino_t ino, struct stat *st) {
	if (ino == FUSE_ROOT_ID) {
		if (fstat(dirfd_, st) != 0)
			return errno;
	} else if (fd(ino) < 0 || fstat(fd(ino), st) != 0) {
		return ENOENT;
	}
	st->st_ino = ino;
	st->st_mode = (st->st_mode & S_IFMT) | (S_ISDIR(st->st_mode) ? 0555 : 0444);
	return 0;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
	char **hit = parent != FUSE_ROOT_ID ? NULL : bsearch(&name, names, count, sizeof *names, byname);
	struct fuse_entry_param e;
	memset(&e, 0, sizeof e);
	if (hit == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	e.ino = (fuse_ino_t)(hit - names) + 2;
	int err = attr(e.ino, &e.attr);
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	e.attr_timeout = e.entry_timeout = FOREVER;
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
	struct stat st;
	int err = attr(ino, &st);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_attr(req, &st, FOREVER);
	(void)fi;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
	fuse_reply_err(req, ENOSYS);
	(void)ino, (void)fi;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
	char *buf = malloc(size ? size : 1);
	ssize_t n = pread(fd(ino), buf, size, off);
	if (n < 0)
		fuse_reply_err(req, EIO);
	else
		fuse_reply_buf(req, buf, n);
	free(buf);
	(void)fi;
}

static void op_ioctl(fuse_req_t req, fuse_ino_t ino, int cmd, void *arg, struct fuse_file_info *fi,
		     unsigned flags, const void *in, size_t insz, size_t outsz) {
	static char buf[PUSH_MAX];
	struct stat st;
	if (ino != FUSE_ROOT_ID && attr(ino, &st) == 0 && st.st_size > 0 && st.st_size <= PUSH_MAX &&
	    pread(fd(ino), buf, st.st_size, 0) == st.st_size) {
		struct fuse_bufvec bv = FUSE_BUFVEC_INIT(st.st_size);
		bv.buf[0].mem = buf;
		fuse_lowlevel_notify_store(se, ino, 0, &bv, 0);
	}
	fuse_reply_err(req, ENOSYS);
	(void)cmd, (void)arg, (void)fi, (void)flags, (void)in, (void)insz, (void)outsz;
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = op_lookup,
	.getattr = op_getattr,
	.open = op_open,
	.read = op_read,
	.ioctl = op_ioctl,
};

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: floor DIR MOUNTPOINT\n");
		return 2;
	}
	if (load(argv[1]) != 0) {
		perror(argv[1]);
		return 1;
	}
	char *args[] = {argv[0], "-o", "ro,fsname=floor"};
	struct fuse_args fa = FUSE_ARGS_INIT(3, args);
	se = fuse_session_new(&fa, &ops, sizeof ops, NULL);
	if (se == NULL || fuse_session_mount(se, argv[2]) != 0)
		return 1;
	int rc = fuse_session_loop(se);
	fuse_session_unmount(se);
	fuse_session_destroy(se);
	return rc == 0 ? 0 : 1;
}
