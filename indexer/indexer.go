// Package indexer builds and saves the indexes of deflated members (what
// npzfs index does, and a mount's --index in the background): of one
// archive, or of every archive under a folder, local or remote, with
// their sidecars when asked.
package indexer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/npzfs/npzfs/dataset"
	"github.com/npzfs/npzfs/internal/english"
	"github.com/npzfs/npzfs/internal/workers"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/remote"
	"github.com/npzfs/npzfs/zip"
)

// Options tune Index.
type Options struct {
	// Keys name the members of a single archive to index ("images" or
	// "images.npy"); with none, every deflated member is.
	Keys []string
	// Workers is how many goroutines inflate: members at once, and parts
	// of a large member (see npz.Member.BuildIndex); 0 means one a core,
	// 1 indexes each member from its start.
	Workers int
	// Verify also reads every member whole, each span of a saved index
	// checked against its CRC-32.
	Verify bool
	// Sidecar also writes each archive's indexes beside it
	// (npz.WriteIndexSidecar), for a dataset to ship: beside a local
	// archive, a file; beside an S3 object, an object put whole in one
	// request, unless one is there that holds every index (see
	// putSidecar).
	Sidecar bool
	// SidecarFile, for one archive, writes its sidecar to this file
	// instead (for an HTTP archive: the file to upload beside it by
	// hand).
	SidecarFile string
}

// Progress is how far an Index has got, safe to read while it runs.
type Progress struct {
	total  atomic.Int64
	before atomic.Int64 // bytes of the archives done
	mu     sync.Mutex
	cur    []*npz.Member // the archive being indexed
	verify bool
	read   atomic.Int64 // bytes read whole by Verify in the current archive
}

// Total is the inflated bytes of the members to index, once counted.
func (p *Progress) Total() int64 { return p.total.Load() }

// Done is the bytes indexed (and, with Verify, read) so far.
func (p *Progress) Done() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, m := range p.cur {
		n += m.Indexed()
	}
	if p.verify {
		n = (n + p.read.Load()) / 2
	}
	return p.before.Load() + n
}

func (p *Progress) current(ms []*npz.Member) {
	p.mu.Lock()
	p.cur = ms
	p.mu.Unlock()
	p.read.Store(0)
}

// MemberIndex is what Index did for one member.
type MemberIndex struct {
	Archive string // its archive's path under the folder indexed, "" for one archive
	Name    string // its name in the archive
	Size    int64
	Stored  bool // a stored member: its index is its block CRC-32s
	npz.IndexResult
	Err error // why it could not be indexed (or, with Verify, read)
}

// memberIndex is what indexing member m of archive did.
func memberIndex(archive string, m *npz.Member, res npz.IndexResult, err error) MemberIndex {
	return MemberIndex{Archive: archive, Name: m.Name(), Size: m.Size(), Stored: m.Method() == zip.Stored, IndexResult: res, Err: err}
}

// Failure is an archive that could not be opened, or a sidecar that could
// not be written.
type Failure struct {
	Archive string // path under the folder indexed, or the archive's name
	Err     error
}

// Report is what Index did.
type Report struct {
	Store    string // the index folder
	Archives int    // archives looked at
	Folder   bool   // the name was a folder
	Workers  int
	Members  []MemberIndex // the deflated members indexed, or tried
	Stored   int           // members that need no index (stored)
	// Small are deflated members too small to need an index (see
	// npz.Member.NeedsIndex); with Verify they are read whole too, and
	// those that fail to are among Members.
	Small    int
	Verified bool // the members were read whole (Options.Verify)
	Failures []Failure
	Sidecars []string // sidecars written
	// SidecarsKept are sidecars beside remote archives that were left as
	// they are: they hold every index already, or another machine put
	// one that does meanwhile.
	SidecarsKept []string
	Elapsed      time.Duration
}

// Bytes is the inflated size of the members.
func (r *Report) Bytes() int64 {
	var n int64
	for _, m := range r.Members {
		n += m.Size
	}
	return n
}

// inflated is the bytes this run inflated: the members it built or
// failed to, and with Verified those whose index was already saved too.
func (r *Report) inflated() int64 {
	var n int64
	for _, m := range r.Members {
		if !m.Loaded || r.Verified {
			n += m.Size
		}
	}
	return n
}

// Counts are the members built, loaded (already saved), split, failed
// (not indexed) and not saved (indexed, but the index could not be
// written).
func (r *Report) Counts() (built, loaded, split, failed, unsaved int) {
	for _, m := range r.Members {
		switch {
		case m.Err != nil:
			failed++
		case m.SOZip:
		case m.Loaded:
			loaded++
		default:
			built++
			if m.SaveErr != nil || !m.Saved {
				unsaved++
			}
		}
		if m.Split {
			split++
		}
	}
	return
}

// OK reports an Index that did all it was asked: every archive opened,
// every member indexed and saved, every sidecar written.
func (r *Report) OK() bool {
	_, _, _, failed, unsaved := r.Counts()
	return failed == 0 && unsaved == 0 && len(r.Failures) == 0
}

// Index builds the saved indexes of the deflated members of what name
// names (see Open: an archive, by path or URL, or every .npz archive
// under a folder, local or remote, sub-folders too, as a mount of the
// folder shows them) in opts.IndexDir, which it needs. An archive that
// cannot be opened, a member that cannot be indexed and an index that
// cannot be saved are in the report; the others are indexed. It fails
// only when there is nothing to do: no index folder, a name that cannot
// be opened, keys that do not name deflated members. progress, if not
// nil, is kept up to date.
func Index(ctx context.Context, name string, opts *dataset.Options, xopts *Options, progress *Progress) (*Report, error) {
	var o dataset.Options
	if opts != nil {
		o = *opts
	}
	var xo Options
	if xopts != nil {
		xo = *xopts
	}
	if xo.Workers < 1 {
		xo.Workers = runtime.GOMAXPROCS(0)
	}
	if progress == nil {
		progress = &Progress{}
	}
	progress.verify = xo.Verify
	if o.IndexDir == "" {
		return nil, errors.New("no folder to keep indexes in: give one (--index-dir)")
	}
	if err := dataset.CheckScheme(name); err != nil {
		return nil, err
	}
	isFolder := dataset.IsRemoteFolder(name)
	if fi, err := os.Stat(name); err == nil && fi.IsDir() && !dataset.IsRemote(name) {
		isFolder = true
	}
	switch {
	case isFolder && len(xo.Keys) > 0:
		return nil, errors.New("a KEY names a member of one archive, not of a folder")
	case isFolder && xo.SidecarFile != "":
		return nil, errors.New("a sidecar file is of one archive, not of a folder: give --sidecar to write each beside its archive")
	}
	store, err := npz.OpenIndexStore(o.IndexDir, cmp.Or(o.IndexCacheBytes, dataset.DefaultIndexCacheBytes))
	if err != nil {
		return nil, err
	}
	defer store.Close()
	o.Archive.Indexes = store
	// The store is open: Open must not open it again. A local archive's
	// sidecar is not read: the indexes built go to the store. A remote
	// one's is, so that a sidecar there already is not rebuilt.
	o.IndexDir, o.Sidecars = "", xo.Sidecar && dataset.IsRemote(name)
	ix := &indexer{opts: &o, xo: &xo, p: progress, rep: &Report{Store: store.Path(), Workers: xo.Workers, Verified: xo.Verify}}

	targets := []indexTarget{{path: name}}
	if isFolder {
		d, err := dataset.Open(ctx, name, &o)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		if targets, err = archivesOf(ctx, d, ix.rep); err != nil {
			return nil, err
		}
		if len(targets) == 0 {
			return nil, fmt.Errorf("no .npz archive under %s", d.Name())
		}
		ix.folder, ix.rep.Folder = true, true
	}
	start := time.Now()
	if err := ix.run(ctx, targets); err != nil {
		return nil, err
	}
	store.Close() // waits for the indexes being written
	ix.rep.Elapsed = time.Since(start)
	return ix.rep, nil
}

// indexer is one Index.
type indexer struct {
	opts   *dataset.Options
	xo     *Options
	p      *Progress
	rep    *Report
	folder bool // a folder is indexed, not one archive
}

// indexTarget is an archive to index: a file or URL Open takes, or a
// file of a folder (local or remote).
type indexTarget struct {
	path   string             // for dataset.Open, or where a local folder's file lies
	shown  string             // in the report: the path in the folder indexed, or "" for one archive
	folder *dataset.Dataset   // the folder the file is of
	file   dataset.FolderFile // the file, of a folder
}

// name is the target in messages.
func (t *indexTarget) name() string { return cmp.Or(t.shown, t.path) }

// archivesOf lists the .npz archives under the folder d serves (see
// dataset.Dataset.Files), and the folders under it that cannot be
// listed, which the report names.
func archivesOf(ctx context.Context, d *dataset.Dataset, rep *Report) ([]indexTarget, error) {
	files, err := d.Files(ctx)
	var out []indexTarget
	for _, f := range files {
		switch {
		case f.Err != nil:
			rep.Failures = append(rep.Failures, Failure{Archive: f.Path, Err: fmt.Errorf("cannot be read: %w", f.Err)})
		case strings.HasSuffix(f.Path, ".npz"):
			p, _ := d.LocalPath(f)
			out = append(out, indexTarget{shown: f.Path, path: p, folder: d, file: f})
		}
	}
	return out, err
}

// indexed is an archive open to index: its picked members, the backend
// of a remote one's object (for its sidecar), and what closes it.
type indexed struct {
	a       *npz.Archive
	members []*npz.Member
	small   []*npz.Member // deflated members too small to need an index
	backend remote.Backend
	group   *remote.Group
	close   func()
}

// run counts what there is to index, for the progress, then indexes it.
// A single archive stays open throughout; a folder's archives are each
// opened again (a folder may hold more archives than can be open at
// once), but for a remote folder's, which are not counted first (that
// would fetch each twice): the progress's total grows as they are opened.
func (ix *indexer) run(ctx context.Context, targets []indexTarget) error {
	var kept *indexed
	for i := range targets {
		t := &targets[i]
		if t.folder != nil && t.folder.Remote() {
			break
		}
		x, err := ix.open(ctx, t)
		if err != nil && !ix.folder {
			return err
		}
		if err != nil {
			ix.rep.Failures = append(ix.rep.Failures, Failure{Archive: t.shown, Err: err})
			t.path = "" // reported
			continue
		}
		ix.count(x)
		if ix.folder {
			x.close()
		} else {
			kept = x
		}
	}
	ix.rep.Archives = len(targets)
	for i := range targets {
		if err := ctx.Err(); err != nil {
			return err
		}
		t := &targets[i]
		x := kept
		if x == nil {
			counted := t.folder == nil || !t.folder.Remote()
			if counted && t.path == "" {
				continue // reported above
			}
			var err error
			if x, err = ix.open(ctx, t); err != nil {
				ix.rep.Failures = append(ix.rep.Failures, Failure{Archive: t.shown, Err: err})
				continue
			}
			if !counted {
				ix.count(x)
			}
		}
		ix.archive(ctx, x, t)
		x.close()
	}
	return nil
}

// count adds what indexing x reads to the progress's total.
func (ix *indexer) count(x *indexed) { ix.p.total.Add(ix.bytes(x)) }

// bytes is what indexing x reads: its members to index, and with Verify
// its small ones too.
func (ix *indexer) bytes(x *indexed) int64 {
	var n int64
	for _, m := range x.members {
		n += m.Size()
	}
	if ix.xo.Verify {
		for _, m := range x.small {
			n += m.Size()
		}
	}
	return n
}

// open opens an archive to index and picks its members.
func (ix *indexer) open(ctx context.Context, t *indexTarget) (*indexed, error) {
	var x indexed
	if d := t.folder; d != nil {
		a, err := d.OpenFile(ctx, t.file)
		if err != nil {
			return nil, err
		}
		x = indexed{a: a, backend: d.Object(t.file), group: d.Group(), close: func() { a.Close() }}
	} else {
		d, err := dataset.Open(ctx, t.path, ix.opts)
		if err != nil {
			return nil, err
		}
		if d.Kind() == dataset.Folder {
			d.Close()
			return nil, fmt.Errorf("%s is a folder", t.path)
		}
		x = indexed{a: d.Archive(), backend: d.Backend(), group: d.Group(), close: func() { d.Close() }}
	}
	var err error
	if x.members, x.small, err = pickMembers(x.a.Members(), ix.xo.Keys); err != nil {
		x.close()
		return nil, err
	}
	return &x, nil
}

// archive indexes the picked members of one archive, and writes its
// sidecar when asked.
func (ix *indexer) archive(ctx context.Context, x *indexed, t *indexTarget) {
	all := x.a.Members()
	members := x.members
	if len(ix.xo.Keys) == 0 {
		for _, m := range all {
			if m.Method() == zip.Stored && m.Served() && !m.IsDir() && !m.SavesIndex() {
				ix.rep.Stored++
			}
		}
	}
	ix.p.current(members)
	results := make([]MemberIndex, len(members))
	workers.Run(ctx, len(members), ix.xo.Workers, func(_, i int) {
		m := members[i]
		res, err := m.BuildIndex(ctx, ix.xo.Workers)
		if err == nil && ix.xo.Verify {
			err = m.Verify(ctx, &ix.p.read)
		}
		results[i] = memberIndex(t.shown, m, res, err)
	})
	ix.rep.Members = append(ix.rep.Members, results...)
	ix.rep.Small += len(x.small)
	if ix.xo.Verify {
		var mu sync.Mutex
		workers.Run(ctx, len(x.small), ix.xo.Workers, func(_, i int) {
			m := x.small[i]
			if err := m.Verify(ctx, &ix.p.read); err != nil {
				mu.Lock()
				ix.rep.Members = append(ix.rep.Members, MemberIndex{Archive: t.shown, Name: m.Name(), Size: m.Size(), Err: err})
				mu.Unlock()
			}
		})
	}
	failed := slices.ContainsFunc(results, func(r MemberIndex) bool { return r.Err != nil })
	done := ix.bytes(x)
	// A member read through its SOZip index has no index to keep.
	x.members = slices.DeleteFunc(slices.Clone(members), func(m *npz.Member) bool {
		return results[slices.Index(members, m)].SOZip
	})
	if (ix.xo.Sidecar || ix.xo.SidecarFile != "") && !failed && len(x.members) > 0 {
		ix.sidecar(ctx, x, t)
	}
	ix.p.current(nil)
	ix.p.before.Add(done)
}

// sidecar writes an archive's sidecar where asked: to the file named, or
// beside the archive (a local file, or an object put beside a remote
// one).
func (ix *indexer) sidecar(ctx context.Context, x *indexed, t *indexTarget) {
	fail := func(err error) {
		ix.rep.Failures = append(ix.rep.Failures, Failure{Archive: t.name(), Err: err})
	}
	switch {
	case ix.xo.SidecarFile != "":
		if err := npz.WriteIndexSidecar(ctx, ix.xo.SidecarFile, x.members); err != nil {
			fail(fmt.Errorf("cannot write %s: %w", ix.xo.SidecarFile, err))
			return
		}
		ix.rep.Sidecars = append(ix.rep.Sidecars, ix.xo.SidecarFile)
	case x.backend == nil:
		side := npz.SidecarPath(t.path)
		if err := npz.WriteIndexSidecar(ctx, side, x.members); err != nil {
			fail(fmt.Errorf("cannot write %s: %w", side, err))
			return
		}
		ix.rep.Sidecars = append(ix.rep.Sidecars, side)
	default:
		name, written, err := putSidecar(ctx, x)
		switch {
		case err != nil:
			fail(err)
		case written:
			ix.rep.Sidecars = append(ix.rep.Sidecars, name)
		default:
			ix.rep.SidecarsKept = append(ix.rep.SidecarsKept, name)
		}
	}
}

// pickMembers picks the members to index (npz.Member.SavesIndex), all
// or those keys name, and apart from them the deflated ones too small
// to need an index; small stored members are left out.
func pickMembers(all []*npz.Member, keys []string) (index, small []*npz.Member, err error) {
	add := func(m *npz.Member) {
		switch {
		case slices.Contains(index, m) || slices.Contains(small, m):
		case m.SavesIndex():
			index = append(index, m)
		case m.Method() == zip.Deflated:
			small = append(small, m)
		}
	}
	if len(keys) == 0 {
		for _, m := range all {
			if (m.Method() == zip.Deflated || m.SavesIndex()) && !m.IsDir() && m.Served() && m.Size() > 0 {
				add(m)
			}
		}
		return index, small, nil
	}
	for _, k := range keys {
		i := slices.IndexFunc(all, func(m *npz.Member) bool { return m.Name() == k || m.Name() == k+".npy" })
		if i < 0 {
			return nil, nil, fmt.Errorf("no member %q in the archive", k)
		}
		if all[i].Method() != zip.Deflated && !all[i].SavesIndex() {
			return nil, nil, fmt.Errorf("%s is stored and smaller than 16 MiB: it needs no index", all[i].Name())
		}
		add(all[i])
	}
	return index, small, nil
}

// SOZips counts the members read through their SOZip indexes, which
// Counts leaves out: nothing is built or saved for them.
func (r *Report) SOZips() int {
	n := 0
	for _, m := range r.Members {
		if m.Err == nil && m.SOZip {
			n++
		}
	}
	return n
}

// Summary is the report in one line, in the form npzfs index prints (see
// README.md, "npzfs index").
func (r *Report) Summary() string {
	built, loaded, split, failed, unsaved := r.Counts()
	var b strings.Builder
	if len(r.Members) == 0 {
		var none []string
		if r.Stored > 0 {
			none = append(none, english.Plural(r.Stored, "stored member"))
		}
		if r.Small > 0 {
			none = append(none, english.Plural(r.Small, "small deflated member"))
			b.WriteString("no member needs an index: nothing to index")
		} else {
			b.WriteString("no deflated members: nothing to index")
		}
		if len(none) > 0 {
			verb := "need"
			if r.Stored+r.Small == 1 {
				verb = "needs"
			}
			fmt.Fprintf(&b, " (%s %s none)", strings.Join(none, " and "), verb)
		}
	} else {
		secs := r.Elapsed.Seconds()
		sozips := r.SOZips()
		fmt.Fprintf(&b, "indexed %d of %s", built+loaded+sozips, english.Plural(len(r.Members), r.membersNoun()))
		if r.Folder {
			fmt.Fprintf(&b, " of %s", english.Plural(r.Archives, "archive"))
		}
		fmt.Fprintf(&b, " (%.1f MiB)", float64(r.Bytes())/(1<<20))
		if n := r.inflated(); n > 0 {
			// The rate of what was inflated; loading a saved index is
			// not inflating.
			fmt.Fprintf(&b, " in %.1f s, %.0f MB/s", secs, float64(n)/max(secs, 1e-9)/1e6)
		}
		fmt.Fprintf(&b, ": %d built", built)
		if split > 0 {
			fmt.Fprintf(&b, " (%d split among %d threads)", split, r.Workers)
		}
		for _, c := range []struct {
			n    int
			what string
		}{{loaded, "already saved"}, {sozips, "with a SOZip index"}, {failed, "failed"}, {unsaved, "not saved"}, {r.Stored, "stored skipped"}, {r.Small, "small skipped"}} {
			if c.n > 0 {
				fmt.Fprintf(&b, ", %d %s", c.n, c.what)
			}
		}
	}
	if r.Store != "" {
		b.WriteString("; indexes in " + r.Store)
	}
	switch len(r.Sidecars) {
	case 0:
	case 1:
		b.WriteString("; sidecar " + r.Sidecars[0])
	default:
		fmt.Fprintf(&b, "; %d sidecars", len(r.Sidecars))
	}
	switch len(r.SidecarsKept) {
	case 0:
	case 1:
		b.WriteString("; sidecar " + r.SidecarsKept[0] + " already there")
	default:
		fmt.Fprintf(&b, "; %d sidecars already there", len(r.SidecarsKept))
	}
	return b.String()
}

// membersNoun is what the members indexed are: "deflated member", or
// "member" where stored ones are among them (their block CRC-32s).
func (r *Report) membersNoun() string {
	for _, m := range r.Members {
		if m.Stored {
			return "member"
		}
	}
	return "deflated member"
}

// Problems are the report's failures, one line each: archives that could
// not be opened, members that could not be indexed or saved, sidecars
// that could not be written.
func (r *Report) Problems() []string {
	var out []string
	for _, f := range r.Failures {
		out = append(out, prefixed(f.Archive, f.Err.Error()))
	}
	for _, m := range r.Members {
		switch {
		case m.Err != nil:
			out = append(out, prefixed(m.Archive, m.Name+": "+m.Err.Error()))
		case !m.Loaded && m.SaveErr != nil:
			out = append(out, prefixed(m.Archive, m.Name+": cannot save its index: "+m.SaveErr.Error()))
		case !m.Loaded && !m.Saved:
			out = append(out, prefixed(m.Archive, m.Name+": its index was not saved"))
		}
	}
	return out
}

func prefixed(archive, msg string) string {
	if archive == "" {
		return msg
	}
	return archive + ": " + msg
}
