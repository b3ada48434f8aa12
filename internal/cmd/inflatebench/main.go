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
)

func main() {
	runs := flag.Int("runs", 3, "inflate this many times, report the fastest")
	pass := flag.Int("pass", 0, "build the index once with this many workers instead")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: inflatebench [-runs N | -pass N] FILE.gz")
		os.Exit(2)
	}
	data, err := os.ReadFile(flag.Arg(0))
	if err == nil && *pass > 0 {
		err = index(data, *pass)
	} else if err == nil {
		err = run(data, *runs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "inflatebench:", err)
		os.Exit(1)
	}
}

func run(gz []byte, runs int) error {
	body, crc, size, err := gzipBody(gz)
	if err != nil {
		return err
	}
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

func index(gz []byte, workers int) error {
	body, crc, size, err := gzipBody(gz)
	if err != nil {
		return err
	}
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

// gzipBody is the raw DEFLATE stream of a one-member gzip file with a
// plain 10-byte header (as Python's gzip and zlib write), and its trailer.
func gzipBody(gz []byte) (body []byte, crc, size uint32, err error) {
	if len(gz) < 18 || gz[0] != 0x1f || gz[1] != 0x8b || gz[2] != 8 || gz[3] != 0 {
		return nil, 0, 0, fmt.Errorf("not a gzip file with a plain header")
	}
	t := gz[len(gz)-8:]
	return gz[10 : len(gz)-8], binary.LittleEndian.Uint32(t), binary.LittleEndian.Uint32(t[4:]), nil
}
