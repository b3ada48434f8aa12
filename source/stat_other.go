//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package source

import "time"

// stat is the file's size and modification time now, as os.File.Stat
// gives them.
func (s *File) stat() (size int64, mtime time.Time, err error) {
	fi, err := s.f.Stat()
	if err != nil {
		return 0, time.Time{}, err
	}
	return fi.Size(), fi.ModTime(), nil
}
