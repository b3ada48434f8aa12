package npz

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"runtime"
	"sync"
	"sync/atomic"

	crcx "github.com/npzfs/npzfs/internal/crc"
	"github.com/npzfs/npzfs/internal/workers"
	"github.com/npzfs/npzfs/source"
)

// A stored member is verified a block at a time: the CRC-32 of each
// blockSize bytes of its data, combined, must give the CRC-32 its
// archive records. Those block CRC-32s are its saved index (in the
// IndexStore and in sidecars, beside the deflated members' indexes):
// a later mount of the same content that finds them does not verify it
// again, and a read they cover can be checked against them
// (VerifyStrict; a remote archive, whose reads are not spliced).
const blockSize = 128 << 10

// blocksPerJob is how many blocks one job of a pass reads at once.
const blocksPerJob = 16

// minSavedBlocks is the least size of a stored member whose block
// CRC-32s are saved (and looked for): a smaller one is verified again
// sooner than its key is made and a file is read.
const minSavedBlocks = 16 << 20

// blockSums are a stored member's block CRC-32s.
type blockSums struct {
	size int64 // the member's size
	sums []uint32
}

// combined is the CRC-32 of the whole member, from its blocks'.
func (b *blockSums) combined() uint32 {
	n := len(b.sums)
	if n == 0 {
		return 0
	}
	var acc uint32
	if n > 1 {
		s := crcx.NewShift(blockSize)
		for _, v := range b.sums[:n-1] {
			acc = s.Apply(acc) ^ v
		}
	}
	last := b.size - int64(n-1)*blockSize
	return crcx.Combine(acc, b.sums[n-1], last)
}

// blockCount is how many blocks a member of size bytes has.
func blockCount(size int64) int { return int((size + blockSize - 1) / blockSize) }

// storedPass reads a stored member's data on every core, a few blocks
// per job, and checks the CRC-32 of the whole; it returns the block
// CRC-32s, kept in memory where keepSums says.
func (m *Member) storedPass(ctx context.Context, done *atomic.Int64) (*blockSums, error) {
	dataOff, err := m.dataOffset(ctx)
	if err != nil {
		return nil, err
	}
	b := &blockSums{size: m.e.Size, sums: make([]uint32, blockCount(m.e.Size))}
	jobs := (len(b.sums) + blocksPerJob - 1) / blocksPerJob
	k := runtime.GOMAXPROCS(0)
	bufs := make([][]byte, k)
	var errMu sync.Mutex
	var first error
	err = workers.Run(ctx, jobs, k, func(w, j int) {
		if bufs[w] == nil {
			// As large as a job gets, for this member: a small
			// member's pass reads its few bytes into as many.
			bufs[w] = make([]byte, min(blocksPerJob*blockSize, m.e.Size))
		}
		from := int64(j) * blocksPerJob * blockSize
		n := min(int64(blocksPerJob*blockSize), m.e.Size-from)
		if _, err := m.readStored(ctx, dataOff, bufs[w][:n], from); err != nil {
			errMu.Lock()
			first = cmpFirst(first, err)
			errMu.Unlock()
			return
		}
		for i := int64(0); i < n; i += blockSize {
			b.sums[(from+i)/blockSize] = crc32.ChecksumIEEE(bufs[w][i:min(i+blockSize, n)])
		}
		if done != nil {
			done.Add(n)
		}
	})
	if err = cmpFirst(first, err); err != nil {
		return nil, err
	}
	if got := b.combined(); got != m.e.CRC32 {
		return nil, &CRCError{Member: m.Name(), Got: got, Want: m.e.CRC32}
	}
	m.keepSums(b)
	return b, nil
}

// cmpFirst is the first of two errors that is not nil.
func cmpFirst(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// readStored reads exactly len(p) bytes of a stored member's data whose
// first byte is at archive byte dataOff, from off.
func (m *Member) readStored(ctx context.Context, dataOff int64, p []byte, off int64) (int, error) {
	n, err := m.a.r.ReadAtContext(source.WithReadLimit(ctx, dataOff+m.e.Size), p, dataOff+off)
	if n == len(p) {
		return n, nil
	}
	if err == nil || err == io.EOF {
		err = &FormatError{Offset: dataOff + off + int64(n),
			Msg: fmt.Sprintf("archive ends inside %q (changed or truncated since it was opened?)", m.Name()),
			Err: io.ErrUnexpectedEOF}
	}
	return n, err
}

// checksReads reports whether reads of a stored member are checked
// against its block CRC-32s: always where the archive is strict, and for
// an archive read through the daemon (a remote one) whenever a saved
// index gave them, since that is what verified the member.
func (a *Archive) checksReads() bool { return a.opts.Verify == VerifyStrict || !a.hasFD }

// keepSums keeps a stored member's block CRC-32s in memory when its
// reads are checked against them, or when it is large enough to have
// them saved (4 bytes a block, for a sidecar to carry).
func (m *Member) keepSums(b *blockSums) {
	a := m.a
	if !a.checksReads() && m.e.Size < minSavedBlocks {
		return
	}
	a.vmu.Lock()
	defer a.vmu.Unlock()
	if a.sums == nil {
		a.sums = map[int32]*blockSums{}
	}
	a.sums[m.e.Index] = b
}

// checkedSums are the block CRC-32s a read of m is checked against, or
// nil.
func (m *Member) checkedSums() *blockSums {
	if m.st.Load()&flagVerified == 0 || !m.a.checksReads() {
		return nil
	}
	return m.blockSumsOf()
}

// maxCheckedRead is the most a checked read reads at once.
const maxCheckedRead = 1 << 20

// checkedBufs recycles the buffers of checked reads: up to
// maxCheckedRead and a block at each end.
var checkedBufs = sync.Pool{New: func() any { b := make([]byte, maxCheckedRead+2*blockSize); return &b }}

// readChecked reads len(p) bytes of a stored member's data at off, as
// readStored, reading the whole blocks they lie in and checking each
// against its CRC-32: a block that does not match is damage (the
// archive's bytes changed since the CRC-32s were made), and fails the
// read.
func (m *Member) readChecked(ctx context.Context, b *blockSums, dataOff int64, p []byte, off int64) (int, error) {
	bp := checkedBufs.Get().(*[]byte)
	defer checkedBufs.Put(bp)
	done := 0
	for done < len(p) {
		at := off + int64(done)
		first := at / blockSize
		end := min(at+int64(len(p)-done), first*blockSize+maxCheckedRead)
		last := (end - 1) / blockSize
		from, to := first*blockSize, min((last+1)*blockSize, m.e.Size)
		buf := (*bp)[:to-from]
		if _, err := m.readStored(ctx, dataOff, buf, from); err != nil {
			return done, err
		}
		for i := first; i <= last; i++ {
			blk := buf[(i-first)*blockSize : min((i-first+1)*blockSize, to-from)]
			if got := crc32.ChecksumIEEE(blk); got != b.sums[i] {
				return done, &FormatError{Offset: dataOff + i*blockSize,
					Msg: fmt.Sprintf("%q: bytes %d to %d of the member do not have the CRC-32 its saved index records (%08x, not %08x): the archive changed or is damaged", m.Name(), i*blockSize, i*blockSize+int64(len(blk)), got, b.sums[i])}
			}
		}
		done += copy(p[done:], buf[at-from:end-from])
	}
	return done, nil
}

// Saved block CRC-32s, as a file (in an IndexStore, KK/KEY.crc, or in a
// sidecar, KEY.crc; see contentKey), all little-endian:
//
//	magic "NPZFSCRC", version uint32 (1), block size uint32,
//	member size uint64, member CRC-32 uint32, block count uint32,
//	count × CRC-32 uint32, then the CRC-32 of all before it, uint32.
const (
	sumsMagic   = "NPZFSCRC"
	sumsVersion = 1
	sumsHeader  = 8 + 4 + 4 + 8 + 4 + 4
)

// marshalSums is the file of b, for member CRC-32 memberCRC.
func marshalSums(b *blockSums, memberCRC uint32) []byte {
	out := make([]byte, sumsHeader, sumsHeader+4*len(b.sums)+4)
	le := binary.LittleEndian
	copy(out, sumsMagic)
	le.PutUint32(out[8:], sumsVersion)
	le.PutUint32(out[12:], blockSize)
	le.PutUint64(out[16:], uint64(b.size))
	le.PutUint32(out[24:], memberCRC)
	le.PutUint32(out[28:], uint32(len(b.sums)))
	for _, v := range b.sums {
		out = le.AppendUint32(out, v)
	}
	return le.AppendUint32(out, crc32.ChecksumIEEE(out))
}

// errBadSums is wrapped by the errors of a saved file of block CRC-32s
// that is damaged or made for another member.
var errBadSums = errors.New("not the block CRC-32s of this member")

// parseSums reads a file of block CRC-32s made for a member of size
// bytes with CRC-32 memberCRC: its checksum, its header and its blocks,
// which must combine to the member's CRC-32.
func parseSums(p []byte, size int64, memberCRC uint32) (*blockSums, error) {
	le := binary.LittleEndian
	if len(p) < sumsHeader+4 || string(p[:8]) != sumsMagic {
		return nil, fmt.Errorf("%w: no header", errBadSums)
	}
	body := p[:len(p)-4]
	if crc32.ChecksumIEEE(body) != le.Uint32(p[len(p)-4:]) {
		return nil, fmt.Errorf("%w: its checksum fails", errBadSums)
	}
	switch {
	case le.Uint32(p[8:]) != sumsVersion:
		return nil, fmt.Errorf("%w: version %d", errBadSums, le.Uint32(p[8:]))
	case le.Uint32(p[12:]) != blockSize:
		return nil, fmt.Errorf("%w: blocks of %d bytes", errBadSums, le.Uint32(p[12:]))
	case int64(le.Uint64(p[16:])) != size || le.Uint32(p[24:]) != memberCRC:
		return nil, fmt.Errorf("%w: made for a member of another size or CRC-32", errBadSums)
	case int(le.Uint32(p[28:])) != blockCount(size) || len(body) != sumsHeader+4*blockCount(size):
		return nil, fmt.Errorf("%w: %d blocks", errBadSums, le.Uint32(p[28:]))
	}
	b := &blockSums{size: size, sums: make([]uint32, blockCount(size))}
	for i := range b.sums {
		b.sums[i] = le.Uint32(body[sumsHeader+4*i:])
	}
	if b.combined() != memberCRC {
		return nil, fmt.Errorf("%w: they do not combine to its CRC-32", errBadSums)
	}
	return b, nil
}

// sumsKey is a stored member's key in an IndexStore or sidecar, made
// as a deflated member's index key is (see memberIndex.key); "" for one
// that cannot be read now or whose key cannot be made.
func (m *Member) sumsKey(ctx context.Context) string {
	dataOff, err := m.dataOffset(ctx)
	if err != nil {
		return ""
	}
	name, err := m.contentKey(ctx, dataOff, "npzfs member blocks v1\x00", ".crc")
	if err != nil {
		return ""
	}
	return name
}

// saveSums writes a stored member's block CRC-32s, fresh from a pass,
// to the archive's IndexStore, if it has one and the member is large
// enough, in the background (the store's Close waits for it).
func (m *Member) saveSums(ctx context.Context, b *blockSums) {
	s := m.a.opts.Indexes
	if s == nil || m.e.Size < minSavedBlocks {
		return
	}
	name := m.sumsKey(ctx)
	if name == "" || s.dir.Has(name) || !s.startSave() {
		return
	}
	go func() {
		defer s.saves.Done()
		if err := m.putSums(s, name, b); err != nil {
			m.a.notef("npz: %q: cannot save its block CRC-32s: %v", m.Name(), err)
		}
	}()
}

// putSums writes b to the store s as name.
func (m *Member) putSums(s *IndexStore, name string, b *blockSums) error {
	if err := s.dir.Put(name, marshalSums(b, m.e.CRC32)); err != nil {
		return err
	}
	s.saved.Add(1)
	return nil
}

// buildSums is BuildIndex for a stored member that SavesIndex: its
// saved block CRC-32s, or a pass that makes them and saves them in the
// IndexStore before it returns.
func (m *Member) buildSums(ctx context.Context) (IndexResult, error) {
	var res IndexResult
	if m.savedSums(ctx, true) {
		res.Loaded = true
		return res, nil
	}
	b, err := m.storedPass(ctx, nil)
	if err != nil {
		if m.refuse(err) {
			m.a.notef("npz: %q: verification failed, every read fails: %v", m.Name(), reasonText(err))
		}
		return res, err
	}
	m.setVerified(false)
	name := m.sumsKey(ctx)
	if s := m.a.opts.Indexes; s != nil && name != "" {
		res.SaveErr = m.putSums(s, name, b)
		res.Saved = res.SaveErr == nil
	}
	return res, nil
}

// blockSumsOf is the member's block CRC-32s kept in memory, or nil.
func (m *Member) blockSumsOf() *blockSums {
	a := m.a
	a.vmu.Lock()
	defer a.vmu.Unlock()
	return a.sums[m.e.Index]
}

// savedSums looks for a stored member's saved block CRC-32s, in the
// archive's IndexStore, then its sidecar (looked for and waited for when
// wait is set, as far as ctx allows; otherwise only one found already,
// and for a remote archive nothing at all unless it has one), and reports
// whether they verify it: the member is then verified, without a pass.
// Members smaller than minSavedBlocks have none. A member none covers is
// not looked up again, unless the sidecar was still being looked for.
func (m *Member) savedSums(ctx context.Context, wait bool) bool {
	a := m.a
	if m.e.Size < minSavedBlocks || (a.opts.Indexes == nil && a.opts.Sidecar == nil && a.opts.SidecarFinder == nil) {
		return false
	}
	a.vmu.Lock()
	none := a.noSums[m.e.Index]
	a.vmu.Unlock()
	if none || (!wait && a.opts.VerifyLimit < 0 && a.foundSidecar() == nil) {
		// A remote archive's key and store cost requests on the read
		// path: made only where a sidecar found already may hold them.
		return false
	}
	name := m.sumsKey(ctx)
	if name == "" {
		return false
	}
	data, err, final := m.findSums(ctx, name, wait)
	var b *blockSums
	if err == nil && data != nil {
		if b, err = parseSums(data, m.e.Size, m.e.CRC32); err != nil {
			a.notef("npz: %q: saved block CRC-32s not used: %v", m.Name(), err)
			if s := a.opts.Indexes; s != nil && final {
				s.dir.Remove(name)
			}
		}
	}
	if b == nil {
		if final {
			a.vmu.Lock()
			if a.noSums == nil {
				a.noSums = map[int32]bool{}
			}
			a.noSums[m.e.Index] = true
			a.vmu.Unlock()
		}
		return false
	}
	if s := a.opts.Indexes; s != nil {
		s.loaded.Add(1)
	}
	m.keepSums(b)
	m.setVerified(true)
	return true
}

// findSums reads the file name from the store or sidecar; final says
// whether the answer holds for good (no sidecar lookup under way, no
// read that may pass failed).
func (m *Member) findSums(ctx context.Context, name string, wait bool) (data []byte, err error, final bool) {
	a := m.a
	if s := a.opts.Indexes; s != nil && s.dir.Has(name) {
		if data, err = s.dir.Get(name); err == nil {
			return data, nil, true
		}
	}
	head := int64(sumsHeader + 4*blockCount(m.e.Size) + 4)
	sc := a.foundSidecar()
	if wait {
		sc, err = a.sidecarWait(ctx, head)
	}
	if sc == nil {
		return nil, nil, err == nil || errors.Is(err, fs.ErrNotExist)
	}
	src, size, err := sc.lookup(ctx, name, head)
	if err != nil || src == nil {
		return nil, err, err == nil || !passing(err)
	}
	if size != head {
		return nil, fmt.Errorf("%w: %d bytes in %s, not %d", errBadSums, size, sc.Path(), head), true
	}
	data = make([]byte, size)
	if _, err := source.ReadAt(ctx, src, data, 0); err != nil {
		return nil, err, !passing(err)
	}
	return data, nil, true
}
