//go:build linux

package fs

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// mountDevice mounts a FUSE device on dir with opts, as go-fuse would,
// and returns the device's descriptor, for a server that reads the
// device itself (see loop): with mount(2) when opts.DirectMountStrict
// (root with CAP_SYS_ADMIN), else through fusermount3, which opens the
// device, mounts it and passes the descriptor back over a socket.
func mountDevice(dir string, opts *fuse.MountOptions) (int, error) {
	if opts.DirectMountStrict {
		return mountDirect(dir, opts)
	}
	return mountFusermount(dir, opts)
}

// mountDirect mounts /dev/fuse on dir with mount(2).
func mountDirect(dir string, opts *fuse.MountOptions) (int, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return -1, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	fd, err := syscall.Open("/dev/fuse", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: "/dev/fuse", Err: err}
	}
	data := []string{
		"fd=" + strconv.Itoa(fd),
		"rootmode=" + strconv.FormatUint(uint64(st.Mode&syscall.S_IFMT), 8),
		"user_id=" + strconv.Itoa(os.Geteuid()),
		"group_id=" + strconv.Itoa(os.Getegid()),
	}
	// The options mount(2) takes as flags are in DirectMountFlags
	// already (mountFlags).
	data = append(data, deviceOptions(opts)...)
	if err := syscall.Mount(opts.FsName, dir, "fuse."+opts.Name, opts.DirectMountFlags, strings.Join(data, ",")); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

// deviceOptions are the options of the mount in the kernel's own terms,
// those fusermount3 and mount(2) share.
func deviceOptions(opts *fuse.MountOptions) []string {
	o := append([]string(nil), opts.Options...)
	if opts.AllowOther {
		o = append(o, "allow_other")
	}
	return append(o, "max_read="+strconv.Itoa(opts.MaxWrite))
}

// mountFusermount has fusermount3 mount the device on dir and pass its
// descriptor back over a socket (libfuse's protocol: the socket is the
// helper's descriptor 3, named by _FUSE_COMMFD). Its errors go to this
// process's stderr, as go-fuse's do.
func mountFusermount(dir string, opts *fuse.MountOptions) (int, error) {
	bin, err := fusermount()
	if err != nil {
		return -1, err
	}
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("socketpair", err)
	}
	local, remote := os.NewFile(uintptr(pair[0]), "fusermount socket"), os.NewFile(uintptr(pair[1]), "fusermount socket")
	defer local.Close()
	o := append(deviceOptions(opts), "fsname="+escapeOption(opts.FsName), "subtype="+escapeOption(opts.Name))
	proc, err := os.StartProcess(bin, []string{bin, dir, "-o", strings.Join(o, ",")}, &os.ProcAttr{
		Env:   []string{"_FUSE_COMMFD=3"},
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, remote},
	})
	remote.Close()
	if err != nil {
		return -1, err
	}
	state, err := proc.Wait()
	if err != nil {
		return -1, err
	}
	if !state.Success() {
		return -1, fmt.Errorf("%s failed (%v)", bin, state)
	}
	return receiveFD(local)
}

// escapeOption escapes the commas and backslashes of an option's value
// for fusermount3's -o list.
func escapeOption(v string) string {
	return strings.NewReplacer(`\`, `\\`, `,`, `\,`).Replace(v)
}

// receiveFD reads the descriptor fusermount3 sent over sock.
func receiveFD(sock *os.File) (int, error) {
	buf := make([]byte, 1)
	oob := make([]byte, syscall.CmsgSpace(4))
	_, oobn, _, _, err := syscall.Recvmsg(int(sock.Fd()), buf, oob, 0)
	if err != nil {
		return -1, os.NewSyscallError("recvmsg", err)
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, errors.New("fusermount3 did not pass the FUSE device back")
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return -1, errors.New("fusermount3 did not pass the FUSE device back")
	}
	syscall.CloseOnExec(fds[0])
	return fds[0], nil
}
