//go:build linux

package fs

import (
	"sync/atomic"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// opNames are the names of the FUSE requests the server counts, by
// opcode (Linux's include/uapi/linux/fuse.h), as Stats.Requests gives
// them. FORGET is not among them: go-fuse calls Forget once per node of
// a FORGET or a BATCH_FORGET, and those are counted as nodes ("forget").
var opNames = [...]string{
	1:  "lookup",
	3:  "getattr",
	4:  "setattr",
	5:  "readlink",
	6:  "symlink",
	8:  "mknod",
	9:  "mkdir",
	10: "unlink",
	11: "rmdir",
	12: "rename",
	13: "link",
	14: "open",
	15: "read",
	16: "write",
	17: "statfs",
	18: "release",
	20: "fsync",
	21: "setxattr",
	22: "getxattr",
	23: "listxattr",
	24: "removexattr",
	25: "flush",
	27: "opendir",
	28: "readdir",
	29: "releasedir",
	30: "fsyncdir",
	31: "getlk",
	32: "setlk",
	33: "setlkw",
	34: "access",
	35: "create",
	39: "ioctl",
	43: "fallocate",
	44: "readdirplus",
	45: "rename2",
	46: "lseek",
	47: "copy_file_range",
	51: "tmpfile",
	52: "statx",
}

// forgetName is what Stats.Requests calls the nodes the kernel forgot.
const forgetName = "forget"

// requestCounts counts the requests the server has answered, by opcode:
// one atomic add per request, read only by Stats.
type requestCounts struct {
	ops     [len(opNames)]atomic.Int64
	forgets atomic.Int64 // nodes, see opNames
}

// count notes one request, named by its header.
func (c *requestCounts) count(h *fuse.InHeader) {
	if int(h.Opcode) < len(c.ops) {
		c.ops[h.Opcode].Add(1)
	}
}

// lookups is the lookups counted so far.
func (c *requestCounts) lookups() int64 { return c.ops[opLookup].Load() }

// snapshot is the counts so far, by name, without the zeros.
func (c *requestCounts) snapshot() map[string]int64 {
	m := make(map[string]int64)
	for op := range c.ops {
		if n := c.ops[op].Load(); n > 0 && opNames[op] != "" {
			m[opNames[op]] = n
		}
	}
	if n := c.forgets.Load(); n > 0 {
		m[forgetName] = n
	}
	return m
}

// Requests nothing served has, answered ENOSYS as go-fuse's defaults do,
// but counted.

func (s *server) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	return nil, s.refuse(h, fuse.ENOSYS)
}

func (s *server) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	return s.refuse(&in.InHeader, fuse.ENOSYS)
}

func (s *server) GetLk(cancel <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	return s.refuse(&in.InHeader, fuse.ENOSYS)
}

func (s *server) SetLk(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	return s.refuse(&in.InHeader, fuse.ENOSYS)
}

func (s *server) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	return s.refuse(&in.InHeader, fuse.ENOSYS)
}

func (s *server) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	return s.refuse(&in.InHeader, fuse.ENOSYS)
}
