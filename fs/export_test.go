package fs

import "github.com/hanwen/go-fuse/v2/fuse"

type fuseAttrOut = fuse.AttrOut

type fuseContext = fuse.Context

const keepCache = fuse.FOPEN_KEEP_CACHE
