module github.com/npzfs/npzfs

go 1.26.0

require (
	github.com/hanwen/go-fuse/v2 v2.12.1
	github.com/klauspost/compress v1.20.3
	github.com/spf13/pflag v1.0.10
)

require golang.org/x/sys v0.49.0 // indirect
