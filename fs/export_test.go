package fs

import "github.com/hanwen/go-fuse/v2/fuse"

const keepCache = fuse.FOPEN_KEEP_CACHE
