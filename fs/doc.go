//go:build linux

// Package fs serves a tree of Entry values as a read-only FUSE filesystem
// with go-fuse's v2 raw protocol API: folders and files, reads spliced
// from a file where the content says where its bytes lie (a stored
// archive member), every writing operation refused with EROFS. It knows
// nothing of archives: package dataset adapts an archive's tree to Entry,
// and tests serve small trees of their own.
// Nothing is built per node up front or per inode after: a FUSE node ID is
// the entry's Ino; a tree that finds its entries by Ino (Finder) needs no
// more, and for others the server remembers only which entries the
// kernel holds lookups of, until it forgets them. Folders are listed
// through a Listing, at fixed positions that are readdir's offsets.
//
// Choices that matter for users:
//
//   - the mount is "ro"; files are 0444, folders 0555, owned by the
//     mounting user (allow_root narrows this to 0400/0500 with
//     default_permissions);
//   - a tree that never changes (its root a Finder) is opened without
//     requests: OPEN and OPENDIR answer ENOSYS, so the kernel opens files
//     and folders by itself (FUSE's no-open and no-opendir modes), keeps
//     their page cache and listings, and sends no release; the server then
//     keeps nothing per node;
//   - otherwise files open with FOPEN_KEEP_CACHE | FOPEN_NOFLUSH, and
//     folders with FOPEN_CACHE_DIR unless they change (Cacher);
//   - never direct_io, and entries, attributes and failed lookups are
//     cached for an hour (or a Cacher's time): the archive does not
//     change while mounted, and mmap needs the page cache;
//   - reads are asked for in requests of up to MaxRead (1 MiB less 8 KiB,
//     so that a reply fits the splice pipe); stored members are spliced
//     from the archive file into a pipe, whole or the read fails (EIO,
//     never short), checked for a change before and after, and the pipe
//     is spliced on to /dev/fuse (readExact);
//   - errors become errnos in Errno alone (default EIO, never ENOSYS);
//     getxattr and listxattr answer ENOSYS on purpose, so the kernel stops
//     asking for attributes that do not exist.
package fs
