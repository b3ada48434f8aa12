package npz

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/npzfs/npzfs/zip"
)

// A member is verified once the CRC-32 its archive records has been
// checked over all of its bytes: by a pass over them (a stored member's
// bytes read on every core a block at a time, a deflated member's first
// pass, which builds its index as well), or by a saved index made from
// such a pass (see IndexStore and blockSums), whose span or block
// CRC-32s then check the reads they cover. VerifyMode says which members
// an archive verifies before it serves their first byte.
type VerifyMode uint8

const (
	// VerifyAuto verifies each member of up to Options.VerifyLimit
	// bytes before serving it. Larger ones, and every member of an
	// archive whose limit is negative (a remote one), are served
	// unverified unless a saved index covers them, with a log line at
	// their first read, and counted (VerifyStats).
	VerifyAuto VerifyMode = iota
	// VerifyStrict verifies every member before serving it, and checks
	// every read of a stored member against its block CRC-32s.
	VerifyStrict
	// VerifyLazy verifies nothing before serving it: a deflated
	// member's CRC-32 is checked when a read reaches its end, a stored
	// member's only by Member.Verify.
	VerifyLazy
)

var verifyModeNames = [...]string{VerifyAuto: "auto", VerifyStrict: "strict", VerifyLazy: "lazy"}

func (v VerifyMode) String() string {
	if int(v) < len(verifyModeNames) {
		return verifyModeNames[v]
	}
	return fmt.Sprintf("VerifyMode(%d)", v)
}

// ParseVerifyMode reads a VerifyMode by its name: auto, strict or lazy.
func ParseVerifyMode(s string) (VerifyMode, error) {
	for v, name := range verifyModeNames {
		if s == name {
			return VerifyMode(v), nil
		}
	}
	return 0, fmt.Errorf("verify mode %q is none of auto, strict, lazy", s)
}

// DefaultVerifyLimit is the largest member VerifyAuto verifies before
// serving it: an array of 256 MiB with its npy header (up to 64 KiB).
// Verifying one costs about a read of it from the page cache (stored) or
// its parallel first pass (deflated), a fraction of a second at this
// size (BENCHMARKS.md).
const DefaultVerifyLimit = 256<<20 + 64<<10

// CRCError reports a member whose bytes do not have the CRC-32 its
// archive records for them: they are not what was written. Its message
// leaves the member to the line that names it.
type CRCError struct {
	Member    string
	Got, Want uint32
}

func (e *CRCError) Error() string {
	return fmt.Sprintf("npz: CRC-32 mismatch: its bytes give %08x, the archive records %08x", e.Got, e.Want)
}

// Member flags about verification (beside those in member.go).
const (
	flagVerified   = 1 << 17 // verified (see VerifyMode), by a pass or a saved index
	flagFailing    = 1 << 18 // found bad: in verifier.failing
	flagUnverified = 1 << 19 // served before being verified: counted, and noted
	flagRefused    = 1 << 20 // its verification failed: every read fails
)

// verifier is what an archive knows of its members' verification.
type verifier struct {
	vmu     sync.Mutex
	passes  map[int32]*verifyPass // passes under way
	failing map[int32]*failure    // members found bad
	sums    map[int32]*blockSums  // stored members' block CRC-32s, where kept
	noSums  map[int32]bool        // stored members no saved index covers
	vcounts struct{ pass, saved, unverified, unverifiedBytes atomic.Int64 }
}

// verifyPass is a verification under way, which later readers of the
// member wait for.
type verifyPass struct {
	done chan struct{}
	err  error
}

// failure is what made a member fail, and how many reads it failed.
type failure struct {
	err   error
	reads atomic.Int64
}

// VerifyStats is what an archive verified, and what it found.
type VerifyStats struct {
	Passes          int64 // members verified by a pass over their bytes
	Saved           int64 // members verified by a saved index, which checks their reads
	Unverified      int64 // members served before they were verified, or never verified
	UnverifiedBytes int64 // the sizes of those members
	FailingCount    int64 // members whose reads fail because of what they hold
	Failing         []MemberFailure
}

// MemberFailure is a member whose reads fail because of what it holds
// (not because a source failed for a while), and why.
type MemberFailure struct {
	Archive string // set where several archives' are gathered (a folder's); "" from Archive.VerifyStats
	Name    string
	Reason  string
	Reads   int64 // reads that failed
}

// MaxFailures is how many failing members VerifyStats.Add keeps: a
// folder of many damaged archives is summed up, not listed whole.
const MaxFailures = 100

// Add adds o's counts to s, and its failing members, up to MaxFailures
// (FailingCount counts them all).
func (s *VerifyStats) Add(o VerifyStats) {
	s.Passes += o.Passes
	s.Saved += o.Saved
	s.Unverified += o.Unverified
	s.UnverifiedBytes += o.UnverifiedBytes
	s.FailingCount += o.FailingCount
	s.Failing = append(s.Failing, o.Failing[:min(len(o.Failing), max(MaxFailures-len(s.Failing), 0))]...)
}

// VerifyStats reports what the archive verified, and the members that
// failed, in the order of the central directory.
func (a *Archive) VerifyStats() VerifyStats {
	s := VerifyStats{
		Passes: a.vcounts.pass.Load(), Saved: a.vcounts.saved.Load(),
		Unverified: a.vcounts.unverified.Load(), UnverifiedBytes: a.vcounts.unverifiedBytes.Load(),
	}
	a.vmu.Lock()
	defer a.vmu.Unlock()
	for _, i := range slices.Sorted(maps.Keys(a.failing)) {
		f := a.failing[i]
		name := a.member(int(i)).Name()
		reason := strings.TrimPrefix(reasonText(f.err), strconv.Quote(name)+": ")
		s.Failing = append(s.Failing, MemberFailure{Name: name, Reason: reason, Reads: f.reads.Load()})
	}
	s.FailingCount = int64(len(s.Failing))
	return s
}

// Failure is why the member's reads fail, once one failed because of
// what the member holds (its verification, or a read), or nil.
func (m *Member) Failure() error {
	if m.st.Load()&flagFailing == 0 {
		return nil
	}
	a := m.a
	a.vmu.Lock()
	defer a.vmu.Unlock()
	return a.failing[m.e.Index].err
}

// Verified reports whether the member is verified (see VerifyMode).
func (m *Member) Verified() bool { return m.st.Load()&flagVerified != 0 }

// fail records that a read of m failed with err, counted. Errors that
// may pass (a source failing for a while, a read cancelled) and a
// changed archive say nothing of the member, and are not recorded. It
// reports whether the member failed for the first time.
func (m *Member) fail(err error) bool { return m.record(err, 0, 1) }

// refuse records that m's verification failed with err, for good
// unless err may pass: every later read fails with it (the reads are
// counted as they fail, by ready). It reports whether it was the
// member's first failure.
func (m *Member) refuse(err error) bool { return m.record(err, flagRefused, 0) }

// record records err as the member's failure, if it is its first, sets
// flags, and counts reads failed reads.
func (m *Member) record(err error, flags uint32, reads int64) bool {
	if err == nil || passing(err) || errors.Is(err, ErrChanged) || errors.Is(err, ErrClosed) {
		return false
	}
	a := m.a
	a.vmu.Lock()
	defer a.vmu.Unlock()
	m.st.Or(flagFailing | flags)
	f := a.failing[m.e.Index]
	first := f == nil
	if first {
		if a.failing == nil {
			a.failing = map[int32]*failure{}
		}
		f = &failure{err: err}
		a.failing[m.e.Index] = f
	}
	f.reads.Add(reads)
	return first
}

// failed is the error of a read of a member that failed: the first
// failure, counted as another read.
func (m *Member) failed() error {
	a := m.a
	a.vmu.Lock()
	defer a.vmu.Unlock()
	f := a.failing[m.e.Index]
	f.reads.Add(1) // set with flagRefused, which the caller saw
	return f.err
}

// setVerified records the member verified, by a pass over its bytes or
// by a saved index.
func (m *Member) setVerified(saved bool) {
	if m.st.Or(flagVerified)&flagVerified != 0 {
		return
	}
	if saved {
		m.a.vcounts.saved.Add(1)
	} else {
		m.a.vcounts.pass.Add(1)
	}
}

// wantsPass reports whether the archive verifies m by a pass before
// serving it.
func (a *Archive) wantsPass(m *Member) bool {
	switch a.opts.Verify {
	case VerifyStrict:
		return true
	case VerifyAuto:
		return m.e.Size <= a.verifyLimit()
	}
	return false
}

// ready is called before a member's bytes are served: it verifies the
// member first if the archive's VerifyMode says so (once: concurrent
// readers wait for the one pass), and fails for a member found bad.
// Otherwise the member is served unverified, and counted so.
func (m *Member) ready(ctx context.Context) error {
	st := m.st.Load()
	switch {
	case st&flagVerified != 0:
		return nil
	case st&flagRefused != 0:
		return m.failed()
	case st&flagBare != 0:
		err := m.readyBare(ctx)
		if err != nil && m.st.Load()&flagRefused != 0 {
			return m.failed()
		}
		return err
	case m.e.Method == zip.Stored && m.savedSums(ctx, m.a.wantsPass(m)):
		return nil // verified by its saved block CRC-32s
	case m.a.wantsPass(m):
		err := m.verifyOnce(ctx)
		if err != nil && m.st.Load()&flagRefused != 0 {
			return m.failed()
		}
		return err
	}
	m.servedUnverified()
	return nil
}

// readyBare checks a bare .npy, which has no CRC-32: its data must be
// as long as its header says (np.load refuses a shorter file). A header
// that cannot be read otherwise leaves the file served as it is.
func (m *Member) readyBare(ctx context.Context) error {
	_, err := m.readNPY(ctx)
	var te *TruncatedError
	if errors.As(err, &te) {
		if m.refuse(err) {
			m.a.notef("npz: %q: every read fails: %v", m.Name(), err)
		}
		return err
	}
	if err != nil && passing(err) {
		return err
	}
	m.st.Or(flagVerified)
	return nil
}

// servedUnverified counts a member served unverified, the first time,
// and says so in the log where the archive's VerifyMode does not make it
// a choice (VerifyLazy): a member over VerifyAuto's limit, or of a
// remote archive no saved index covers.
func (m *Member) servedUnverified() {
	if m.st.Or(flagUnverified)&flagUnverified != 0 {
		return
	}
	a := m.a
	a.vcounts.unverified.Add(1)
	a.vcounts.unverifiedBytes.Add(m.e.Size)
	if a.opts.Verify != VerifyAuto || !m.HasCRC() {
		return
	}
	if a.opts.VerifyLimit < 0 {
		if !a.hasNoSidecar() {
			return // a sidecar may cover it: its index is looked for as it is read
		}
		a.notef("npz: %q: served unverified (%s): the archive is remote and no saved index covers it; --verify=strict fetches it whole first", m.Name(), sizeText(m.e.Size))
		return
	}
	what := "a read that reaches its end checks its CRC-32"
	if m.e.Method == zip.Stored {
		what = "npzfs ls --verify checks its CRC-32"
	}
	a.notef("npz: %q: served unverified (%s, over the %s --verify=auto checks first): %s; --verify=strict verifies every member", m.Name(), sizeText(m.e.Size), limitText(a.verifyLimit()), what)
}

// verifyLimit is the largest member VerifyAuto verifies by a pass.
func (a *Archive) verifyLimit() int64 { return cmp.Or(a.opts.VerifyLimit, DefaultVerifyLimit) }

// limitText says VerifyAuto's limit: in whole MiB (the default's header
// allowance left out) from 1 MiB on.
func limitText(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return sizeText(n)
}

// sizeText says a size in bytes as people read it.
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// verifyOnce verifies the member, or waits for the pass another reader
// started, for as long as ctx allows. The pass runs on whatever its
// first reader's context says of values, but is not cancelled with it:
// the others wait for it too. It ends when the archive is closed. A pass
// that fails in a way that may pass is made again by the next reader.
func (m *Member) verifyOnce(ctx context.Context) error {
	if m.e.Size <= inlinePass {
		// A few reads: made on the reader's goroutine, under its
		// context, sooner than another is started and waited for
		// (readers that meet meanwhile each make it).
		return m.passed(m.pass(ctx, nil))
	}
	a := m.a
	a.vmu.Lock()
	p := a.passes[m.e.Index]
	if p == nil {
		if m.st.Load()&(flagVerified|flagFailing) != 0 {
			a.vmu.Unlock()
			return m.ready(ctx)
		}
		if a.passes == nil {
			a.passes = map[int32]*verifyPass{}
		}
		p = &verifyPass{done: make(chan struct{})}
		a.passes[m.e.Index] = p
		go m.runPass(context.WithoutCancel(ctx), p)
	}
	a.vmu.Unlock()
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runPass runs the pass p and records what it found.
func (m *Member) runPass(ctx context.Context, p *verifyPass) {
	a := m.a
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-a.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := m.passed(m.pass(ctx, nil))
	cancel()
	a.vmu.Lock()
	delete(a.passes, m.e.Index)
	p.err = err
	a.vmu.Unlock()
	close(p.done)
}

// inlinePass is the largest member whose pass its reader makes itself:
// one job of a stored member's pass, a small deflated member's one read.
const inlinePass = blocksPerJob * blockSize

// passed records what a pass found, err, and returns what its readers
// are to be told: nil once the member is verified.
func (m *Member) passed(err error) error {
	switch {
	case err == nil:
		m.setVerified(false)
	case errors.Is(err, errLoadedIndex):
		m.setVerified(true)
		err = nil
	case m.refuse(err):
		m.a.notef("npz: %q: verification failed, every read fails: %v", m.Name(), reasonText(err))
	}
	return err
}

// pass reads the member whole and checks its CRC-32, counting the bytes
// it reads in done, when it is not nil: a stored member's blocks on
// every core (their CRC-32s kept as its saved index, when it is large
// enough to have one), a deflated member's first pass (its index saved
// as any index is; with a SOZip index, its chunks inflated on every
// core, nothing saved), or for a small deflated member one read.
func (m *Member) pass(ctx context.Context, done *atomic.Int64) error {
	if err := m.readable(); err != nil {
		return err
	}
	switch {
	case m.e.Method == zip.Stored:
		b, err := m.storedPass(ctx, done)
		if err == nil {
			m.saveSums(ctx, b)
		}
		return err
	case m.NeedsIndex():
		res, err := m.BuildIndex(ctx, runtime.GOMAXPROCS(0))
		if err != nil {
			return err
		}
		if done != nil {
			done.Add(m.e.Size)
		}
		if res.Loaded && !res.SOZip {
			return errLoadedIndex
		}
		return nil // (a SOZip index's chunks were inflated: a pass)
	}
	return m.readWhole(ctx, done)
}

// errLoadedIndex is pass's answer for a deflated member whose complete
// saved index was loaded: verified by it, without a pass.
var errLoadedIndex = errors.New("verified by its saved index")

// readWhole reads the member from its start to its end, as it is
// served, counting the bytes in done when it is not nil: a deflated
// member's inflater checks its CRC-32 at the end.
func (m *Member) readWhole(ctx context.Context, done *atomic.Int64) error {
	buf := make([]byte, min(verifyBuf, max(m.e.Size, 1)))
	for off := int64(0); off < m.e.Size; {
		k := min(int64(len(buf)), m.e.Size-off)
		n, _, err := m.readRaw(ctx, buf[:k], off)
		off += int64(n)
		if done != nil {
			done.Add(int64(n))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// verifyBuf is what a whole read reads at a time.
const verifyBuf = 1 << 20

// Verify reads the member whole and checks its bytes, whatever the
// archive's VerifyMode: a stored member's CRC-32 against the one the
// archive records, a deflated member's as its inflater reaches the end
// of the stream, a bare .npy's length against its header's; bytes read
// are counted in done, when it is not nil. A member that cannot be read
// says why (a *MethodError for one npzfs does not read at all). The
// member is then verified, or failing, as a mount's verification would
// have left it.
func (m *Member) Verify(ctx context.Context, done *atomic.Int64) error {
	if m.IsDir() || m.st.Load()&flagVerified != 0 && m.e.Method == zip.Stored {
		return nil
	}
	var err error
	if m.st.Load()&flagBare != 0 {
		if err = m.readyBare(ctx); err == nil {
			err = m.readWhole(ctx, done)
		}
		return err
	}
	err = m.pass(ctx, done)
	if errors.Is(err, errLoadedIndex) {
		// Verified by its index as a mount is, but asked to read it:
		// each span is checked against the index as it is read.
		err = m.readWhole(ctx, done)
	}
	switch {
	case err == nil:
		m.setVerified(false)
	case m.refuse(err):
		m.a.notef("npz: %q: verification failed, every read fails: %v", m.Name(), reasonText(err))
	}
	return err
}
