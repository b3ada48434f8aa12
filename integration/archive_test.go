//go:build linux

package integration

import (
	"archive/zip"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/npzfs/npzfs/npy"
)

// member is one entry of a test archive.
type member struct {
	name    string
	data    []byte
	deflate bool
}

// arrayMember is a .npy member and what its views should hold.
type arrayMember struct {
	member
	descr  string
	shape  []int64
	header []byte // the .npy header: magic, version, length, dict
	raw    []byte // the array data
}

var archiveTime = time.Date(2023, 3, 14, 15, 9, 26, 0, time.UTC)

func writeZip(t *testing.T, path string, members []member) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, m := range members {
		h := &zip.FileHeader{Name: m.name, Method: zip.Store, Modified: archiveTime}
		if m.deflate {
			h.Method = zip.Deflate
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// newArray encodes a .npy member with npy.EncodeHeader.
func newArray(t *testing.T, name, descr string, shape []int64, raw []byte, deflate bool) arrayMember {
	t.Helper()
	h, err := npy.EncodeHeader(descr, false, shape)
	if err != nil {
		t.Fatalf("EncodeHeader(%q, %v): %v", descr, shape, err)
	}
	data := append(append([]byte{}, h...), raw...)
	return arrayMember{member: member{name: name, data: data, deflate: deflate}, descr: descr, shape: shape, header: h, raw: raw}
}

// f32s is n little-endian float32 values: i*0.25 - 100.
func f32s(n int) []byte {
	b := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(i)*0.25-100))
	}
	return b
}

// i64s is n little-endian int64 values: i*i - 7.
func i64s(n int) []byte {
	b := make([]byte, 8*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(int64(i)*int64(i)-7))
	}
	return b
}

// testArchive writes the archive most tests use:
//
//	images.npy  <f4 (6, 50, 40), stored
//	labels.npy  <i8 (1000,), deflated
//	big.npy     <f4 (1048576,), 4 MiB deflated (several inflate spans)
//
// It is built once per test binary (in sharedDir) and only ever read.
func testArchive(t *testing.T) (string, []arrayMember) {
	t.Helper()
	shared.once.Do(func() {
		// Stays set if building stops the test half-way (t.Fatal).
		shared.err = errors.New("an earlier test failed to build it")
		shared.path, shared.arrays, shared.err = buildTestArchive(t)
	})
	if shared.err != nil {
		t.Fatalf("building the test archive: %v", shared.err)
	}
	return shared.path, shared.arrays
}

var shared struct {
	once   sync.Once
	path   string
	arrays []arrayMember
	err    error
	sum    [32]byte // sha256 when written: TestMain checks it at the end
}

func buildTestArchive(t *testing.T) (string, []arrayMember, error) {
	arrays := []arrayMember{
		newArray(t, "images.npy", "<f4", []int64{6, 50, 40}, f32s(6*50*40), false),
		newArray(t, "labels.npy", "<i8", []int64{1000}, i64s(1000), true),
		newArray(t, "big.npy", "<f4", []int64{1 << 20}, f32s(1<<20), true),
	}
	ms := make([]member, len(arrays))
	for i, a := range arrays {
		ms[i] = a.member
	}
	path := filepath.Join(sharedDir, "data.npz")
	writeZip(t, path, ms)
	if t.Failed() {
		return "", nil, errors.New("see the errors above")
	}
	shared.sum = sha256File(t, path)
	return path, arrays, nil
}

// manyArrays writes an archive of n stored arrays a000000.npy... of three
// float32 values each (i, i+1, i+2).
func manyArrays(t *testing.T, n int) string {
	t.Helper()
	h, err := npy.EncodeHeader("<f4", false, []int64{3})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "many.npz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	data := make([]byte, len(h)+12)
	copy(data, h)
	for i := 0; i < n; i++ {
		for j := 0; j < 3; j++ {
			binary.LittleEndian.PutUint32(data[len(h)+4*j:], math.Float32bits(float32(i+j)))
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("a%06d.npy", i), Method: zip.Store, Modified: archiveTime})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}
