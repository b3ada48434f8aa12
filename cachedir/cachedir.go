// Package cachedir keeps files in a folder bounded in bytes, the least
// recently used going first, safely shared by several processes: each
// file is written whole to a temporary name and renamed into place, and
// recency is the file's modification time, which a read touches, so every
// process sharing the folder sees the others' use. It is what npzfs's
// disk caches (fetched blocks of remote archives, indexes of deflated
// members) are made of; what a file holds, and how to check it, is theirs.
package cachedir

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// A Dir is a folder of files bounded in bytes. Names are slash-separated
// paths of at most two elements ("key" or "group/key"); a group's folder
// goes when its last file does.
type Dir struct {
	dir string
	max int64

	mu       sync.Mutex
	files    map[string]entry // by name
	used     int64            // bytes of files, as last seen
	written  int64            // bytes written since the last scan
	trimming bool
	closing  bool           // Close was called: no more background trims
	trimmed  sync.WaitGroup // the trim running in the background
}

type entry struct {
	size int64
	used time.Time
}

// tempPrefix starts the names of files being written.
const tempPrefix = ".tmp-"

// Open opens (and creates, mode 0700) the folder dir, holding at most
// maxBytes of files.
func Open(dir string, maxBytes int64) (*Dir, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("cache folder %s: a bound of %d bytes", dir, maxBytes)
	}
	d := &Dir{dir: dir, max: maxBytes, files: map[string]entry{}}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	f.Close()
	// The books are made in the background: a folder of many thousand
	// files takes a while to list, and a mount should not wait for it.
	d.trimming = true
	d.trimmed.Add(1)
	go d.scanAndTrim()
	return d, nil
}

// scanAndTrim brings the books up to date and trims the folder to its
// bound, in the background: the caller set d.trimming and added one to
// d.trimmed.
func (d *Dir) scanAndTrim() {
	defer d.trimmed.Done()
	d.scan()
	d.trim()
	d.mu.Lock()
	d.trimming = false
	d.mu.Unlock()
}

// Path is the folder.
func (d *Dir) Path() string { return d.dir }

// Close waits for the background trimming to end, and leaves the folder
// within its bound.
func (d *Dir) Close() error {
	d.mu.Lock()
	d.closing = true // Put starts no trim (no trimmed.Add) from now on
	d.mu.Unlock()
	d.trimmed.Wait()
	// The books may be stale: a background scan does not see files
	// written while it reads the folder.
	if err := d.scan(); err != nil {
		return err
	}
	d.trim()
	return nil
}

// Writable reports whether files can be stored in the folder, by
// storing none: it makes a temporary file and removes it.
func (d *Dir) Writable() error {
	f, err := os.CreateTemp(d.dir, tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("%s cannot be written: %w", d.dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// Used is the bytes of files the folder holds, as last seen (after Open,
// once the folder has been listed in the background).
func (d *Dir) Used() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.used
}

// Get returns the file name's contents, and marks it used.
func (d *Dir) Get(name string) ([]byte, error) {
	path := filepath.Join(d.dir, filepath.FromSlash(name))
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d.touch(name, path)
	return b, nil
}

// Open opens the file name for reading, and marks it used. The file
// stays readable while open, even if it is trimmed away meanwhile.
func (d *Dir) Open(name string) (*os.File, error) {
	path := filepath.Join(d.dir, filepath.FromSlash(name))
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	d.touch(name, path)
	return f, nil
}

func (d *Dir) touch(name, path string) {
	now := time.Now()
	os.Chtimes(path, now, now)
	d.mu.Lock()
	if e, ok := d.files[name]; ok {
		e.used = now
		d.files[name] = e
	}
	d.mu.Unlock()
}

// Has reports whether the file name is there.
func (d *Dir) Has(name string) bool {
	_, err := os.Stat(filepath.Join(d.dir, filepath.FromSlash(name)))
	return err == nil
}

// Put stores data as the file name, whole or not at all, and starts
// trimming in the background when the folder holds too much.
func (d *Dir) Put(name string, data []byte) error {
	return d.PutFrom(name, bytes.NewReader(data))
}

// PutFrom stores what src writes as the file name, whole or not at all
// (nothing is stored when src fails), as Put does: src writes straight
// to the file, so a large file need not be held in memory first.
func (d *Dir) PutFrom(name string, src io.WriterTo) error {
	path := filepath.Join(d.dir, filepath.FromSlash(name))
	folder := filepath.Dir(path)
	size, err := writeAtomic(folder, path, src)
	if err != nil {
		return err
	}
	d.mu.Lock()
	if old, ok := d.files[name]; ok {
		d.used -= old.size
	}
	d.files[name] = entry{size: size, used: time.Now()}
	d.used += size
	d.written += size
	start := !d.trimming && !d.closing && (d.used > d.max || d.written > d.max/8)
	if start {
		d.trimming = true
		d.trimmed.Add(1)
	}
	d.mu.Unlock()
	if start {
		go d.scanAndTrim()
	}
	return nil
}

// Remove removes the file name (one found damaged, say).
func (d *Dir) Remove(name string) {
	os.Remove(filepath.Join(d.dir, filepath.FromSlash(name)))
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.files[name]; ok {
		d.used -= e.size
		delete(d.files, name)
	}
}

// writeAtomic writes a file whole or not at all: a temporary file in
// folder, renamed into place. It returns the bytes written.
func writeAtomic(folder, path string, src io.WriterTo) (int64, error) {
	f, err := os.CreateTemp(folder, tempPrefix+"*")
	if errors.Is(err, iofs.ErrNotExist) {
		// The group's folder is new, or was trimmed away just now.
		if err = os.MkdirAll(folder, 0o700); err == nil {
			f, err = os.CreateTemp(folder, tempPrefix+"*")
		}
	}
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 64<<10)
	n, err := src.WriteTo(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return 0, err
	}
	return n, nil
}

// scan reads the folder again, so the books hold what every process
// sharing it wrote. Temporary files an hour old (a crash's) go.
func (d *Dir) scan() error {
	files := make(map[string]entry)
	var used int64
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		entries, err := os.ReadDir(filepath.Join(d.dir, rel))
		if err != nil {
			return err
		}
		for _, e := range entries {
			name := e.Name()
			if rel != "" {
				name = rel + "/" + name
			}
			if e.IsDir() {
				if depth == 0 {
					walk(name, 1)
				}
				continue
			}
			info, err := e.Info()
			if err != nil || !info.Mode().IsRegular() {
				continue
			}
			if strings.HasPrefix(e.Name(), tempPrefix) {
				if time.Since(info.ModTime()) > time.Hour {
					os.Remove(filepath.Join(d.dir, filepath.FromSlash(name)))
				}
				continue
			}
			files[name] = entry{size: info.Size(), used: info.ModTime()}
			used += info.Size()
		}
		return nil
	}
	if err := walk("", 0); err != nil {
		return err
	}
	d.mu.Lock()
	d.files, d.used, d.written = files, used, 0
	d.mu.Unlock()
	return nil
}

// trim removes the least recently used files until the folder holds at
// most 90% of its bound (so it does not trim at every file), and the
// group folders left empty.
func (d *Dir) trim() {
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
	groups := map[string]bool{}
	for _, name := range gone {
		os.Remove(filepath.Join(d.dir, filepath.FromSlash(name)))
		if g, _, ok := strings.Cut(name, "/"); ok {
			groups[g] = true
		}
	}
	for g := range groups {
		os.Remove(filepath.Join(d.dir, g)) // fails unless empty
	}
}
