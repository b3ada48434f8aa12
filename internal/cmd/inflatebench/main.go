// Command inflatebench inflates the DEFLATE stream inside a gzip file with
// inflate, for scripts/bench.sh to set beside igzip and
// libdeflate-gunzip on the same files: it reads the file whole, then
// inflates it to nowhere, several times, and prints the fastest run as
// "bytes=N secs=S" (output bytes, seconds of inflating). Run it with
// GOMAXPROCS=1 for one core.
//
// With -pass N it builds instead the random-access index of the stream
// once, with N workers (1: the sequential first pass; more: the parallel
// one), and prints "bytes=N secs=S index=B split=K" (seconds of
// indexing, the index's size as saved, 1 if the pass was split).
//
// With -member NAME the file is a zip archive instead, and the stream
// its member NAME's (a packed member's SOZip chunks inflate as one
// stream, their flushes empty blocks).
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"time"

	"github.com/npzfs/npzfs/inflate"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/zip"
)

func main() {
	runs := flag.Int("runs", 3, "inflate this many times, report the fastest")
	pass := flag.Int("pass", 0, "build the index once with this many workers instead")
	name := flag.String("member", "", "inflate this member of a zip archive, not a gzip file's stream")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: inflatebench [-runs N | -pass N] [-member NAME] FILE.gz|FILE.zip")
		os.Exit(2)
	}
	data, err := os.ReadFile(flag.Arg(0))
	var body []byte
	var crc, size uint32
	switch {
	case err != nil:
	case *name != "":
		body, crc, size, err = zipMember(data, *name)
	default:
		body, crc, size, err = gzipBody(data)
	}
	if err == nil && *pass > 0 {
		err = index(body, crc, size, *pass)
	} else if err == nil {
		err = run(body, crc, size, *runs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "inflatebench:", err)
		os.Exit(1)
	}
}

func run(body []byte, crc, size uint32, runs int) error {
	best := time.Duration(-1)
	for range runs {
		h := crc32.NewIEEE()
		t := time.Now()
		n, err := io.Copy(h, inflate.NewReader(bytes.NewReader(body)))
		d := time.Since(t)
		if err != nil {
			return err
		}
		if uint32(n) != size || h.Sum32() != crc {
			return fmt.Errorf("inflated %d bytes with CRC-32 %08x; the gzip trailer says %d bytes, %08x", n, h.Sum32(), size, crc)
		}
		if best < 0 || d < best {
			best = d
		}
	}
	fmt.Printf("bytes=%d secs=%.6f\n", int64(size), best.Seconds())
	return nil
}

func index(body []byte, crc, size uint32, workers int) error {
	r := inflate.NewReaderAt(bytes.NewReader(body), int64(len(body)), int64(size), crc, &inflate.Options{SpanSize: npz.DefaultSpanSize})
	t := time.Now()
	split, err := r.IndexAllParallel(context.Background(), workers)
	d := time.Since(t)
	if err != nil {
		return err
	}
	idx, ok := r.MarshalIndex()
	if !ok {
		return fmt.Errorf("no complete index after the pass")
	}
	n := 0
	if split {
		n = 1
	}
	fmt.Printf("bytes=%d secs=%.6f index=%d split=%d\n", int64(size), d.Seconds(), len(idx), n)
	return nil
}

// zipMember is the raw DEFLATE stream of the member name of the zip
// archive b, with its CRC-32 and (32-bit) size.
func zipMember(b []byte, name string) (body []byte, crc, size uint32, err error) {
	z, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, 0, 0, err
	}
	var e *zip.Entry
	err = z.Entries(func(x *zip.Entry) {
		if x.Name == name && e == nil {
			c := *x
			e = &c
		}
	})
	switch {
	case err != nil:
		return nil, 0, 0, err
	case e == nil || e.Method != zip.Deflated || e.Size >= 1<<32:
		return nil, 0, 0, fmt.Errorf("no deflated member %q of under 4 GiB", name)
	}
	off, err := z.DataOffset(e)
	if err != nil {
		return nil, 0, 0, err
	}
	return b[off : off+e.CompressedSize], e.CRC32, uint32(e.Size), nil
}

// gzipBody is the raw DEFLATE stream of a one-member gzip file with a
// plain 10-byte header (as Python's gzip and zlib write), and its trailer.
func gzipBody(gz []byte) (body []byte, crc, size uint32, err error) {
	if len(gz) < 18 || gz[0] != 0x1f || gz[1] != 0x8b || gz[2] != 8 || gz[3] != 0 {
		return nil, 0, 0, fmt.Errorf("not a gzip file with a plain header")
	}
	t := gz[len(gz)-8:]
	return gz[10 : len(gz)-8], binary.LittleEndian.Uint32(t), binary.LittleEndian.Uint32(t[4:]), nil
}
