package dataset

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/npzfs/npzfs/folder"
	"github.com/npzfs/npzfs/inflate"
	"github.com/npzfs/npzfs/npy"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/remote"
)

// Kind is what a dataset is.
type Kind uint8

const (
	// Archive is a .npz archive (a zip of .npy files).
	Archive Kind = iota
	// NPY is a bare .npy file, served as an archive of that one array.
	NPY
	// Folder is a folder of archives and .npy files (package folder).
	Folder
)

func (k Kind) String() string {
	switch k {
	case NPY:
		return ".npy file"
	case Folder:
		return "folder"
	}
	return ".npz archive"
}

// Options tune Open. The zero value opens a local archive or folder with
// the defaults, keeping no index.
type Options struct {
	// Archive is passed to every archive opened (span cache and index
	// budgets, header limit, helpers, Logf). Its Indexes, Sidecar and
	// Sidecars are set by Open from IndexDir and Sidecars.
	Archive npz.Options
	// IndexDir is where the indexes of deflated members are kept across
	// mounts (npz.IndexStore), at most IndexCacheBytes of them (0 means
	// DefaultIndexCacheBytes); "" keeps none. A folder that cannot be
	// opened is logged and not used.
	IndexDir        string
	IndexCacheBytes int64
	// Sidecars has each local archive use the index sidecar beside it
	// (npz.SidecarPath), when there is one.
	Sidecars bool
	// Remote tunes remote sources.
	Remote Remote
}

// DefaultIndexCacheBytes bounds the index folder unless
// Options.IndexCacheBytes says otherwise.
const DefaultIndexCacheBytes = 1 << 30

// A Dataset is what a mount serves: one archive, or a folder of them.
type Dataset struct {
	name    string // as shown: an absolute path, or a URL without secrets
	kind    Kind
	remote  bool
	archive *npz.Archive
	folder  folder.Store
	store   *npz.IndexStore
	group   *remote.Group  // a remote dataset's sources
	backend remote.Backend // a remote archive's
	listing *remote.Folder // a remote folder's listings
	cache   *inflate.Cache
	closers []io.Closer // closed by Close, last first
	logf    func(string, ...any)
	opts    Options // as Open completed them (OpenFile's)
}

// Open opens name: a URL (https://, http://, s3://; see IsRemote), a
// folder, or a file holding a .npz archive or a bare .npy file (told
// apart by its bytes, see npz.New). Nothing is mounted: an archive is
// opened (Archive), a folder's top is read (Store). A name that looks
// like a URL of another scheme is refused.
func Open(ctx context.Context, name string, opts *Options) (*Dataset, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	d := &Dataset{logf: o.Archive.Logf}
	if d.logf == nil {
		d.logf = func(string, ...any) {}
	}
	if err := CheckScheme(name); err != nil {
		return nil, err
	}
	// One span cache and window budget for every archive opened, which
	// Stats reads.
	o.Archive.ShareBudgets()
	d.cache = o.Archive.Cache
	if o.IndexDir != "" {
		s, err := npz.OpenIndexStore(o.IndexDir, cmp.Or(o.IndexCacheBytes, DefaultIndexCacheBytes))
		if err != nil {
			// Indexes save time, nothing more: the dataset is served
			// without them.
			d.logf("%v; indexes of deflated members are not kept", err)
		} else {
			d.store = s
			d.closers = append(d.closers, s) // closed last: waits for saves
			o.Archive.Indexes = s
		}
	}
	if IsRemote(name) && o.Archive.Verify == npz.VerifyAuto {
		// A remote member is verified by a saved index (a sidecar), or
		// not before it is served: a pass would fetch it whole.
		o.Archive.VerifyLimit = -1
	}
	d.opts = o
	var err error
	if IsRemote(name) {
		err = d.openRemote(ctx, name, &o)
	} else {
		err = d.openLocal(ctx, name, &o)
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// openLocal opens a folder or a file.
func (d *Dataset) openLocal(ctx context.Context, name string, o *Options) error {
	abs, err := filepath.Abs(name)
	if err != nil {
		return err
	}
	d.name = abs
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s does not exist (check the path)", abs)
	case err != nil:
		return fmt.Errorf("cannot read %s: %v", abs, errors.Unwrap(err))
	case fi.IsDir():
		return d.openFolder(abs)
	}
	ao := o.Archive
	ao.Sidecars = o.Sidecars
	ao.LogName = cmp.Or(ao.LogName, filepath.Base(abs))
	a, err := npz.Open(ctx, abs, &ao)
	if err != nil {
		return describe(abs, err)
	}
	if err := truncatedNPY(ctx, a); err != nil {
		a.Close()
		return fmt.Errorf("%s: %v", abs, err)
	}
	d.setArchive(a)
	return nil
}

// truncatedNPY refuses a bare .npy cut short (its data shorter than its
// header says), which np.load refuses and every read of would fail.
func truncatedNPY(ctx context.Context, a *npz.Archive) error {
	if !a.Bare() {
		return nil
	}
	var te *npz.TruncatedError
	for m := range a.All() {
		if _, err := m.Header(ctx); errors.As(err, &te) {
			return errors.New(strings.TrimPrefix(err.Error(), "npz: "))
		}
	}
	return nil
}

// openFolder opens the folder dir on local disk (folder.Dir).
func (d *Dataset) openFolder(dir string) error {
	st, err := folder.NewDir(dir)
	if err != nil {
		return fmt.Errorf("cannot open folder %s: %v", dir, err)
	}
	d.kind, d.folder = Folder, st
	return nil
}

// setArchive makes a the dataset's.
func (d *Dataset) setArchive(a *npz.Archive) {
	d.kind, d.archive = Archive, a
	if a.Bare() {
		d.kind = NPY
	}
	d.closers = append(d.closers, a)
}

// formatError is err's malformed zip or .npy, if that is what it is.
func formatError(err error) error {
	var ze *npz.FormatError
	if errors.As(err, &ze) {
		return ze
	}
	var ne *npy.FormatError
	if errors.As(err, &ne) {
		return ne
	}
	return nil
}

// describe says in one line why the file at path is not an archive.
func describe(path string, err error) error {
	if fe := formatError(err); fe != nil {
		return fmt.Errorf("%s is not a readable .npz archive or .npy file (%v)", path, fe)
	}
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("cannot open %s: %v", path, pe.Err)
	}
	return err
}

// Name is the dataset as it may be shown: an absolute path, or a URL
// without user info or query string.
func (d *Dataset) Name() string { return d.name }

// Kind says what the dataset is.
func (d *Dataset) Kind() Kind { return d.kind }

// Remote reports a dataset read from a server.
func (d *Dataset) Remote() bool { return d.remote }

// Archive is the archive of an Archive or NPY dataset, nil for a folder.
func (d *Dataset) Archive() *npz.Archive { return d.archive }

// Store is what a Folder dataset holds, nil for another.
func (d *Dataset) Store() folder.Store { return d.folder }

// ArchiveOptions are what the archives of a folder are opened with: the
// dataset's (one span cache and window budget for all, the index store),
// with its sidecars.
func (d *Dataset) ArchiveOptions() npz.Options {
	ao := d.opts.Archive
	ao.Sidecars = d.opts.Sidecars
	return ao
}

// SetBudgets resizes the dataset's budgets while it is served, for a
// memory target that changed (memplan.Follow): the span cache to spans
// bytes, the indexes' window budget to indexes, a remote dataset's block
// cache (with a folder's listings) to remote. Lower ones are kept to at
// once, as far as reads under way and listings kept allow.
func (d *Dataset) SetBudgets(spans, indexes, remote int64) {
	d.cache.SetBudget(spans)
	d.opts.Archive.Windows.SetLimit(indexes)
	if d.group != nil {
		d.group.Cache().SetMax(remote)
	}
}

// Close closes what Open opened: the archive or folder, a remote source
// and its disk cache, then the index store, which waits for indexes
// being saved.
func (d *Dataset) Close() error {
	var first error
	for i := len(d.closers) - 1; i >= 0; i-- {
		if err := d.closers[i].Close(); err != nil && first == nil {
			first = err
		}
	}
	d.closers = nil
	return first
}

// CheckScheme refuses a name that looks like a URL of a scheme npzfs does
// not read, rather than looking it up as a local path.
func CheckScheme(name string) error {
	scheme, _, ok := strings.Cut(name, "://")
	if !ok || IsRemote(name) || scheme == "" {
		return nil
	}
	for _, c := range scheme {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.') {
			return nil // not a scheme: a path with "://" in it
		}
	}
	return fmt.Errorf("unknown URL scheme %q in %s: npzfs reads https://, http:// and s3:// URLs, and local paths", scheme+"://", Redact(name))
}
