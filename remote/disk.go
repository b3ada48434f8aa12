package remote

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A DiskCache keeps fetched blocks in a folder, so that reading an
// unchanged object again, in a later mount or by another one, does not
// fetch them again. It is bounded in bytes: past the bound, the blocks
// used least recently go. Several processes may share one folder.
//
// Blocks are keyed by the object's identity (its name as shown, without
// secrets, and its size, ETag, version and modification time) and by the
// block size, so a changed object never meets the blocks of the old one.
// Each block is a file written whole and renamed into place, holding a
// small header (magic, length, block number, and a CRC-32C of the key,
// the block number and the data): a block that is truncated, corrupt, of
// another length or another block's is removed and fetched again, never
// served.
//
// Layout: DIR/v1/KEY/INDEX, where KEY is the hex SHA-256 of the identity
// and block size (first 16 bytes) and INDEX the block's number in hex;
// DIR/v1/KEY/object names the object, for people.
type DiskCache struct {
	dir  string // DIR/v1
	max  int64
	logf func(string, ...any)

	mu       sync.Mutex
	files    map[string]diskFile // by path relative to dir
	used     int64               // bytes of files, as last seen
	written  int64               // bytes written since the last scan
	trimming bool
	trimmed  sync.WaitGroup // the trim running in the background
	failed   bool           // a write failed: logged once, then silent
}

type diskFile struct {
	size int64
	used time.Time
}

// diskMagic starts every block file; diskHeader is its header's length:
// the magic, the data's length (4 bytes), the CRC-32C of key, block
// number and data (4) and the block number (8), little-endian.
const (
	diskMagic  = "npzfsbk1"
	diskHeader = 24
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// OpenDiskCache opens (and creates) the cache folder dir, holding at most
// maxBytes of blocks. logf, if not nil, is told about damaged blocks and
// failed writes.
func OpenDiskCache(dir string, maxBytes int64, logf func(string, ...any)) (*DiskCache, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("disk cache %s: a bound of %d bytes", dir, maxBytes)
	}
	d := &DiskCache{dir: filepath.Join(dir, "v1"), max: maxBytes, logf: logf}
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return nil, fmt.Errorf("disk cache: %w", err)
	}
	if err := d.scan(); err != nil {
		return nil, fmt.Errorf("disk cache: %w", err)
	}
	d.trim()
	return d, nil
}

// Close waits for the cache's background work to end.
func (d *DiskCache) Close() error {
	d.trimmed.Wait()
	return nil
}

// Dir is the cache's folder, as given to OpenDiskCache.
func (d *DiskCache) Dir() string { return filepath.Dir(d.dir) }

// Used is the bytes of blocks the cache holds, as last seen.
func (d *DiskCache) Used() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.used
}

// diskKey is the folder of an object's blocks of size blockSize.
func diskKey(identity string, blockSize int64) string {
	sum := sha256.Sum256([]byte(identity + "\x00block=" + strconv.FormatInt(blockSize, 10)))
	return hex.EncodeToString(sum[:16])
}

func blockName(key string, idx int64) string {
	return key + "/" + strconv.FormatInt(idx, 16)
}

// get returns block idx of the object keyed key, n bytes long, or false.
func (d *DiskCache) get(key string, idx int64, n int64) ([]byte, bool) {
	name := blockName(key, idx)
	path := filepath.Join(d.dir, name)
	buf, err := os.ReadFile(path)
	if err != nil {
		if !errors.Is(err, iofs.ErrNotExist) {
			d.log("disk cache: %v", err)
		}
		return nil, false
	}
	data, err := parseBlock(buf, key, idx, n)
	if err != nil {
		d.log("disk cache: %s: %v; removed, fetching it again", path, err)
		os.Remove(path)
		d.forget(name)
		return nil, false
	}
	now := time.Now()
	os.Chtimes(path, now, now) // recency, for other processes' eviction
	d.mu.Lock()
	if f, ok := d.files[name]; ok {
		f.used = now
		d.files[name] = f
	}
	d.mu.Unlock()
	return data, true
}

// parseBlock checks a block file's header and returns its data, which
// must be block idx of the object keyed key, n bytes long.
func parseBlock(buf []byte, key string, idx, n int64) ([]byte, error) {
	if len(buf) < diskHeader || string(buf[:8]) != diskMagic {
		return nil, errors.New("not a block file")
	}
	size := int64(binary.LittleEndian.Uint32(buf[8:]))
	sum := binary.LittleEndian.Uint32(buf[12:])
	data := buf[diskHeader:]
	switch {
	case size != n:
		return nil, fmt.Errorf("holds %d bytes, the block is %d", size, n)
	case int64(len(data)) != size:
		return nil, fmt.Errorf("truncated: %d bytes of %d", len(data), size)
	case int64(binary.LittleEndian.Uint64(buf[16:])) != idx || blockSum(key, idx, data) != sum:
		return nil, errors.New("checksum mismatch")
	}
	return data, nil
}

// blockSum is the checksum of block idx of the object keyed key.
func blockSum(key string, idx int64, data []byte) uint32 {
	var head [8]byte
	binary.LittleEndian.PutUint64(head[:], uint64(idx))
	sum := crc32.Update(0, castagnoli, []byte(key))
	sum = crc32.Update(sum, castagnoli, head[:])
	return crc32.Update(sum, castagnoli, data)
}

// put stores block idx of the object keyed key. Failures are logged once
// and otherwise ignored: the cache is an optimisation.
func (d *DiskCache) put(key, identity string, idx int64, data []byte) {
	name := blockName(key, idx)
	if err := d.write(key, identity, idx, data); err != nil {
		d.mu.Lock()
		first := !d.failed
		d.failed = true
		d.mu.Unlock()
		if first {
			d.log("disk cache: cannot store blocks (%v); going on without", err)
		}
		return
	}
	size := int64(diskHeader + len(data))
	d.mu.Lock()
	if old, ok := d.files[name]; ok {
		d.used -= old.size
	}
	d.files[name] = diskFile{size: size, used: time.Now()}
	d.used += size
	d.written += size
	start := !d.trimming && (d.used > d.max || d.written > d.max/8)
	if start {
		d.trimming = true
		d.trimmed.Add(1)
	}
	d.mu.Unlock()
	if start {
		go func() {
			defer d.trimmed.Done()
			d.scan()
			d.trim()
			d.mu.Lock()
			d.trimming = false
			d.mu.Unlock()
		}()
	}
}

func (d *DiskCache) write(key, identity string, idx int64, data []byte) error {
	name := blockName(key, idx)
	folder := filepath.Join(d.dir, key)
	if err := os.MkdirAll(folder, 0o700); err != nil {
		return err
	}
	obj := filepath.Join(folder, "object")
	if _, err := os.Stat(obj); errors.Is(err, iofs.ErrNotExist) {
		writeAtomic(folder, obj, []byte(identity+"\n"))
	}
	buf := make([]byte, diskHeader, diskHeader+len(data))
	copy(buf, diskMagic)
	binary.LittleEndian.PutUint32(buf[8:], uint32(len(data)))
	binary.LittleEndian.PutUint32(buf[12:], blockSum(key, idx, data))
	binary.LittleEndian.PutUint64(buf[16:], uint64(idx))
	buf = append(buf, data...)
	err := writeAtomic(folder, filepath.Join(d.dir, name), buf)
	if errors.Is(err, iofs.ErrNotExist) {
		// Trimmed away by another process, or by this one, just now.
		if err = os.MkdirAll(folder, 0o700); err == nil {
			err = writeAtomic(folder, filepath.Join(d.dir, name), buf)
		}
	}
	return err
}

// writeAtomic writes a file whole or not at all: a temporary file in
// folder, renamed into place.
func writeAtomic(folder, path string, data []byte) error {
	f, err := os.CreateTemp(folder, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// forget drops a file from the books.
func (d *DiskCache) forget(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f, ok := d.files[name]; ok {
		d.used -= f.size
		delete(d.files, name)
	}
}

// scan reads the folder again, so the books hold what every process
// sharing it wrote. Temporary files an hour old (a crash's) go.
func (d *DiskCache) scan() error {
	files := make(map[string]diskFile)
	var used int64
	keys, err := os.ReadDir(d.dir)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if !k.IsDir() {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(d.dir, k.Name()))
		if err != nil {
			continue
		}
		for _, e := range entries {
			info, err := e.Info()
			if err != nil || !info.Mode().IsRegular() || e.Name() == "object" {
				continue
			}
			if strings.HasPrefix(e.Name(), ".tmp-") {
				if time.Since(info.ModTime()) > time.Hour {
					os.Remove(filepath.Join(d.dir, k.Name(), e.Name()))
				}
				continue
			}
			files[k.Name()+"/"+e.Name()] = diskFile{size: info.Size(), used: info.ModTime()}
			used += info.Size()
		}
	}
	d.mu.Lock()
	d.files, d.used, d.written = files, used, 0
	d.mu.Unlock()
	return nil
}

// trim removes the least recently used blocks until the cache holds at
// most 90% of its bound (so it does not trim at every block), and the
// folders left empty.
func (d *DiskCache) trim() {
	d.mu.Lock()
	if d.used <= d.max {
		d.mu.Unlock()
		return
	}
	names := make([]string, 0, len(d.files))
	for name := range d.files {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return d.files[a].used.Compare(d.files[b].used) })
	var gone []string
	for _, name := range names {
		if d.used <= d.max/10*9 {
			break
		}
		d.used -= d.files[name].size
		delete(d.files, name)
		gone = append(gone, name)
	}
	d.mu.Unlock()
	folders := map[string]bool{}
	for _, name := range gone {
		os.Remove(filepath.Join(d.dir, name))
		folders[filepath.Dir(name)] = true
	}
	for f := range folders {
		entries, err := os.ReadDir(filepath.Join(d.dir, f))
		if err == nil && len(entries) == 1 && entries[0].Name() == "object" {
			os.Remove(filepath.Join(d.dir, f, "object"))
			os.Remove(filepath.Join(d.dir, f))
		}
	}
}

func (d *DiskCache) log(format string, args ...any) {
	if d.logf != nil {
		d.logf(format, args...)
	}
}
