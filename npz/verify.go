package npz

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"sync/atomic"
)

// verifyBuf is what Verify reads at a time.
const verifyBuf = 1 << 20

// Verify reads the member whole, as it is served, and checks its bytes:
// a stored member's CRC-32 against the one the archive records (a
// deflated member's is checked by its inflater as it reaches the end of
// the stream); bytes read are counted in done, when it is not nil. A
// member that cannot be read says why (a *MethodError for one npzfs does
// not read at all).
func (m *Member) Verify(ctx context.Context, done *atomic.Int64) error {
	f := m.File()
	if f == nil {
		return nil
	}
	buf := make([]byte, min(verifyBuf, max(f.Size(), 1)))
	var crc uint32
	for off := int64(0); off < f.Size(); {
		n, err := f.ReadAtContext(ctx, buf, off)
		crc = crc32.Update(crc, crc32.IEEETable, buf[:n])
		off += int64(n)
		if done != nil {
			done.Add(int64(n))
		}
		if err == io.EOF && off == f.Size() {
			break
		}
		if err != nil {
			return err
		}
	}
	if m.e.Method == 0 && m.HasCRC() && crc != m.e.CRC32 {
		return fmt.Errorf("CRC-32 of the bytes is %08x, the archive says %08x", crc, m.e.CRC32)
	}
	return nil
}
