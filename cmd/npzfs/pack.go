package main

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/npzfs/npzfs/dataset"
	"github.com/npzfs/npzfs/internal/english"
	"github.com/npzfs/npzfs/pack"
)

func init() {
	register("pack", &command{
		summary: "rewrite an archive for random access: aligned arrays, SOZip chunks",
		usage:   "[flags] IN OUT",
		help:    packHelp,
		run:     runPack,
	})
}

func runPack(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("pack", stdout, stderr)
	chunk := fl.Int64("chunk", pack.DefaultChunk, fmt.Sprintf("deflate members in SOZip chunks of `BYTES` (%d to %d), each inflated alone: a read anywhere inflates half of one on average", pack.MinChunk, pack.MaxChunk))
	compress := fl.String("compress", pack.Keep.String(), "compress the arrays as `MODE` says: keep (stored arrays stay stored, deflated ones deflated), none (all stored), deflate (all deflated), auto (deflated where that saves a tenth or more, else stored)")
	zip64 := fl.Bool("zip64", false, "write zip64 records for every member, as an archive of members over 4 GiB has them (for tests)")
	fl.MarkHidden("zip64")
	var rf remoteFlags
	rf.add(fl)
	if code, done := parseFlags(fl, args); done {
		return code
	}
	if fl.NArg() != 2 {
		return argsError(stderr, "pack", fl.Args(), 2, "IN and OUT")
	}
	if err := rf.check(); err != nil {
		return usageError(stderr, "pack", err.Error())
	}
	c, err := pack.ParseCompress(*compress)
	if err != nil {
		return usageError(stderr, "pack", "--compress: "+err.Error())
	}
	if *chunk < pack.MinChunk || *chunk > pack.MaxChunk {
		return usageError(stderr, "pack", fmt.Sprintf("--chunk %d: give %d to %d bytes", *chunk, pack.MinChunk, pack.MaxChunk))
	}
	in, out := fl.Arg(0), fl.Arg(1)
	if dataset.IsRemote(out) {
		return usageError(stderr, "pack", "OUT is a local file: pack writes no URL")
	}
	ctx, stop := interruptible()
	defer stop()
	d, err := openArchive(ctx, in, &rf)
	if err != nil {
		return fail(stderr, "pack", err)
	}
	defer d.Close()
	var p packProgress
	stopDraw := progress(stderr, "packing", &p, time.Now())
	res, err := pack.Archive(ctx, d.Archive(), out, &pack.Options{Chunk: *chunk, Compress: c, Zip64: *zip64, Progress: p.set})
	stopDraw()
	if err != nil {
		return fail(stderr, "pack", err)
	}
	fmt.Fprintln(stdout, packSummary(out, res, *chunk))
	return exitOK
}

// packProgress is what a run has done, for the progress line.
type packProgress struct{ done, total atomic.Int64 }

func (p *packProgress) set(done, total int64) { p.done.Store(done); p.total.Store(total) }
func (p *packProgress) Done() int64           { return p.done.Load() }
func (p *packProgress) Total() int64          { return p.total.Load() }

// packSummary is the line pack prints once done.
func packSummary(out string, r pack.Result, chunk int64) string {
	var parts []string
	add := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	add(r.Aligned, "array stored aligned", "arrays stored aligned")
	add(r.Stored, "other stored", "others stored")
	in := "deflated in SOZip chunks of " + english.Size(chunk)
	add(r.Chunked, in, in)
	add(r.Deflate, "deflated whole", "deflated whole")
	ratio := 100.0
	if r.In > 0 {
		ratio = float64(r.Out) / float64(r.In) * 100
	}
	members := "members"
	if r.Members == 1 {
		members = "member"
	}
	return fmt.Sprintf("%s: %d %s (%s), %s from %s (%.1f%%)", out, r.Members, members, strings.Join(parts, ", "), english.Size(r.Out), english.Size(r.In), ratio)
}
