package remote

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	iofs "io/fs"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/npzfs/npzfs/cachedir"
)

// A DiskCache keeps fetched blocks in a folder, so that reading an
// unchanged object again, in a later mount or by another one, does not
// fetch them again. It is bounded in bytes: past the bound, the blocks
// used least recently go (package cachedir). Several processes may share
// one folder.
//
// Blocks are keyed by the object's identity (its name as shown, without
// secrets, and its size, ETag, version and modification time) and by the
// block size, so a changed object never meets the blocks of the old one.
// Each block is a file holding a small header (magic, length, block
// number, and a CRC-32C of the key, the block number and the data): a
// block that is truncated, corrupt, of another length or another block's
// is removed and fetched again, never served.
//
// Layout: DIR/v1/KEY/INDEX, where KEY is the hex SHA-256 of the identity
// and block size (first 16 bytes) and INDEX the block's number in hex.
type DiskCache struct {
	dir  *cachedir.Dir
	logf func(string, ...any)

	mu     sync.Mutex
	failed bool            // a write failed: logged once, then silent
	said   map[string]bool // block files whose problem was logged
}

// maxSaid bounds the block files whose problems are logged one by one.
const maxSaid = 1000

// diskMagic starts every block file; diskHeader is its header's length:
// the magic, the data's length (4 bytes), the CRC-32C of key, block
// number and data (4) and the block number (8), little-endian.
const (
	diskMagic  = "npzfsbk1"
	diskHeader = 24
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// OpenDiskCache opens (and creates) the cache folder dir, holding at most
// maxBytes of blocks. A folder that cannot be written is refused, empty
// or not: a cache that keeps nothing it fetches is not what was asked
// for. logf, if not nil, is told about damaged blocks and failed writes,
// once for each block file.
func OpenDiskCache(dir string, maxBytes int64, logf func(string, ...any)) (*DiskCache, error) {
	d, err := cachedir.Open(filepath.Join(dir, "v1"), maxBytes)
	if err == nil {
		if err = d.Writable(); err != nil {
			d.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("disk cache: %w", err)
	}
	return &DiskCache{dir: d, logf: logf}, nil
}

// Close waits for the cache's background work to end.
func (d *DiskCache) Close() error { return d.dir.Close() }

// Used is the bytes of blocks the cache holds, as last seen.
func (d *DiskCache) Used() int64 { return d.dir.Used() }

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
	buf, err := d.dir.Get(name)
	if err != nil {
		if !errors.Is(err, iofs.ErrNotExist) {
			d.logBlock(name, "disk cache: %v; fetching the block instead", err)
		}
		return nil, false
	}
	data, err := parseBlock(buf, key, idx, n)
	if err != nil {
		d.logBlock(name, "disk cache: %s: %v; removed, fetching it again", filepath.Join(d.dir.Path(), name), err)
		d.dir.Remove(name)
		return nil, false
	}
	return data, true
}

// logBlock logs a problem of the block file name, the first time.
func (d *DiskCache) logBlock(name, format string, args ...any) {
	d.mu.Lock()
	first := !d.said[name] && len(d.said) < maxSaid
	if first {
		if d.said == nil {
			d.said = map[string]bool{}
		}
		d.said[name] = true
	}
	d.mu.Unlock()
	if first {
		d.log(format, args...)
	}
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
func (d *DiskCache) put(key string, idx int64, data []byte) {
	buf := make([]byte, diskHeader, diskHeader+len(data))
	copy(buf, diskMagic)
	binary.LittleEndian.PutUint32(buf[8:], uint32(len(data)))
	binary.LittleEndian.PutUint32(buf[12:], blockSum(key, idx, data))
	binary.LittleEndian.PutUint64(buf[16:], uint64(idx))
	if err := d.dir.Put(blockName(key, idx), append(buf, data...)); err != nil {
		d.mu.Lock()
		first := !d.failed
		d.failed = true
		d.mu.Unlock()
		if first {
			d.log("disk cache: cannot store blocks (%v); going on without", err)
		}
	}
}

func (d *DiskCache) log(format string, args ...any) {
	if d.logf != nil {
		d.logf(format, args...)
	}
}
