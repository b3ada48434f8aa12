package pack

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// outBuf is how many bytes output gathers before writing them.
const outBuf = 4 << 20

// output is the temporary file an archive is written to, beside its
// destination, buffered: small headers and members go out in large
// writes. A local header written before its data's sizes are known is
// written again in place (WriteAt): in the buffer while it is there,
// else in the file. The file is renamed over the destination once whole
// (commit), or removed (discard).
type output struct {
	f    *os.File
	tmp  string // the temporary file's path
	dest string
	buf  []byte
	base int64 // the file offset of buf[0]
}

// create makes the temporary file of dest, in dest's folder, with the
// mode a new file gets (0666 less the umask).
func create(dest string) (*output, error) {
	if fi, err := os.Stat(dest); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s is a folder: give the path of the archive to write", dest)
	}
	dir, base := filepath.Split(dest)
	for range 100 {
		var r [6]byte
		if _, err := rand.Read(r[:]); err != nil {
			return nil, err
		}
		tmp := filepath.Join(dir, "."+base+".pack-"+hex.EncodeToString(r[:])+".tmp")
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("cannot write %s: %w", dest, pe.Err)
		}
		if err != nil {
			return nil, err
		}
		return &output{f: f, tmp: tmp, dest: dest, buf: make([]byte, 0, outBuf)}, nil
	}
	return nil, fmt.Errorf("cannot make a temporary file beside %s", dest)
}

// Write appends p.
func (o *output) Write(p []byte) (int, error) {
	if len(o.buf)+len(p) > cap(o.buf) {
		if err := o.flush(); err != nil {
			return 0, err
		}
	}
	if len(p) >= cap(o.buf) {
		n, err := o.f.Write(p)
		o.base += int64(n)
		return n, err
	}
	o.buf = append(o.buf, p...)
	return len(p), nil
}

// flush writes the buffer out.
func (o *output) flush() error {
	n, err := o.f.Write(o.buf)
	o.base += int64(n)
	o.buf = o.buf[:0]
	return err
}

// WriteAt writes p over bytes written already, at off.
func (o *output) WriteAt(p []byte, off int64) error {
	end := o.base + int64(len(o.buf))
	if off < 0 || off+int64(len(p)) > end {
		return fmt.Errorf("pack: rewrite of bytes %d to %d, past the %d written", off, off+int64(len(p)), end)
	}
	if off < o.base {
		n := min(int64(len(p)), o.base-off)
		if _, err := o.f.WriteAt(p[:n], off); err != nil {
			return err
		}
		p, off = p[n:], off+n
	}
	if len(p) > 0 {
		copy(o.buf[off-o.base:], p)
	}
	return nil
}

// Truncate drops every byte from off on: what follows is written there.
func (o *output) Truncate(off int64) error {
	if off >= o.base {
		o.buf = o.buf[:min(off-o.base, int64(len(o.buf)))]
		return nil
	}
	o.buf = o.buf[:0]
	if err := o.f.Truncate(off); err != nil {
		return err
	}
	if _, err := o.f.Seek(off, 0); err != nil {
		return err
	}
	o.base = off
	return nil
}

// commit writes what is left, syncs the file to disk and renames it over
// the destination; it returns the file's size. On failure the temporary
// file is removed.
func (o *output) commit() (int64, error) {
	size := o.base + int64(len(o.buf))
	err := o.flush()
	if err == nil {
		err = o.f.Sync()
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.tmp, o.dest)
	}
	if err != nil {
		os.Remove(o.tmp)
		return 0, err
	}
	return size, nil
}

// discard closes and removes the temporary file.
func (o *output) discard() {
	o.f.Close()
	os.Remove(o.tmp)
}
