package fs

import "github.com/hanwen/go-fuse/v2/fuse"

type fuseAttrOut = fuse.AttrOut

const keepCache = fuse.FOPEN_KEEP_CACHE
