// Command inflatebench inflates the DEFLATE stream inside a gzip file with
// npz/inflate, for scripts/bench.sh to set beside igzip and
// libdeflate-gunzip on the same files: it reads the file whole, then
// inflates it to nowhere, several times, and prints the fastest run as
// "bytes=N secs=S" (output bytes, seconds of inflating). Run it with
// GOMAXPROCS=1 for one core.
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"time"

	"github.com/npzfs/npzfs/npz/inflate"
)

func main() {
	runs := flag.Int("runs", 3, "inflate this many times, report the fastest")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: inflatebench [-runs N] FILE.gz")
		os.Exit(2)
	}
	data, err := os.ReadFile(flag.Arg(0))
	if err == nil {
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

// gzipBody is the raw DEFLATE stream of a one-member gzip file with a
// plain 10-byte header (as Python's gzip and zlib write), and its trailer.
func gzipBody(gz []byte) (body []byte, crc, size uint32, err error) {
	if len(gz) < 18 || gz[0] != 0x1f || gz[1] != 0x8b || gz[2] != 8 || gz[3] != 0 {
		return nil, 0, 0, fmt.Errorf("not a gzip file with a plain header")
	}
	t := gz[len(gz)-8:]
	return gz[10 : len(gz)-8], binary.LittleEndian.Uint32(t), binary.LittleEndian.Uint32(t[4:]), nil
}
