//go:build linux

package daemon

import (
	"fmt"
	"os"
	"strconv"

	"github.com/npzfs/npzfs/internal/mountinfo"
)

// setReadAhead sets the kernel's readahead for the mount on dir, so large
// sequential reads and mmap faults arrive as requests of up to kb KiB
// instead of the kernel default (128 KiB). Only root may; others keep the
// default.
func setReadAhead(dir string, kb int) error {
	m, ok := mountinfo.Find(dir)
	if !ok || m.Dev == "" {
		return fmt.Errorf("%s is not in the mount table", dir)
	}
	return os.WriteFile("/sys/class/bdi/"+m.Dev+"/read_ahead_kb", []byte(strconv.Itoa(kb)+"\n"), 0)
}
