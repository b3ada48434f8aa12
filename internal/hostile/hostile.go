// Package hostile builds the damaged and hostile archives the npz and
// integration tests feed npzfs, with what each must come to: refused, or
// opened with some files served byte for byte, some failing every read,
// some absent. It is test support; nothing in npzfs imports it.
package hostile

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math/rand"
	"os"
	"strings"
	"sync"

	"github.com/npzfs/npzfs/npy"
)

// Case is one archive and what npzfs must make of it.
type Case struct {
	Name    string
	Archive []byte
	// Refused: the archive itself is unreadable (no end record or central
	// directory); opening and mounting it fail.
	Refused bool
	// Good maps served paths to their exact content.
	Good map[string][]byte
	// Bad lists served files every whole read of which fails (EIO at the
	// mount).
	Bad []string
	// Absent lists paths that must not be served.
	Absent []string
	// Empty lists folders served with nothing in them: the views folders
	// of served .npy members whose headers cannot be read (KEY/ exists
	// whenever KEY.npy is served and the name is free, so that listings
	// and lookups always agree).
	Empty []string
	// Reasons maps member names (as in the archive) to a piece of the
	// reason npzfs gives for not serving them, or for their reads failing
	// or their having no views.
	Reasons map[string]string
	// Problems are pieces of the archive-wide problems reported.
	Problems []string
}

// Member is one entry written by Zip.
type Member struct {
	Name    string
	Data    []byte
	Deflate bool
	// Raw, when set, is written as the member's compressed bytes with the
	// header as given (sizes, CRC, method, flags): archive/zip's CreateRaw.
	Raw    []byte
	Header *zip.FileHeader
	Mode   fs.FileMode // set with SetMode when non-zero
}

// Zip writes the members with archive/zip.
func Zip(ms []Member) []byte {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, m := range ms {
		if m.Header != nil {
			h := *m.Header
			h.Name = m.Name
			fw, err := w.CreateRaw(&h)
			must(err)
			_, err = fw.Write(m.Raw)
			must(err)
			continue
		}
		h := &zip.FileHeader{Name: m.Name, Method: zip.Store}
		if m.Deflate {
			h.Method = zip.Deflate
		}
		if m.Mode != 0 {
			h.SetMode(m.Mode)
		}
		fw, err := w.CreateHeader(h)
		must(err)
		_, err = fw.Write(m.Data)
		must(err)
	}
	must(w.Close())
	return buf.Bytes()
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// NPY is a .npy member: the header numpy writes for descr and shape, then
// raw.
func NPY(descr string, shape []int64, raw []byte) []byte {
	h, err := npy.EncodeHeader(descr, false, shape)
	must(err)
	return append(h, raw...)
}

// NPYDict is a .npy member of the given format version whose header
// holds dict as it is (padded with spaces and a newline to a multiple of
// 64), then raw. It writes what EncodeHeader would refuse.
func NPYDict(major int, dict string, raw []byte) []byte {
	pre := 10
	if major > 1 {
		pre = 12
	}
	total := (pre + len(dict) + 1 + 63) / 64 * 64
	text := dict + strings.Repeat(" ", total-pre-len(dict)-1) + "\n"
	b := []byte(npy.Magic)
	b = append(b, byte(major), 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(text)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(text)))
	}
	b = append(b, text...)
	return append(b, raw...)
}

// Bytes is n deterministic bytes that compress a little.
func Bytes(n int, seed int64) []byte {
	b := make([]byte, n)
	rng := rand.New(rand.NewSource(seed))
	for i := range b {
		if i%7 == 0 {
			b[i] = byte(rng.Intn(256))
		} else {
			b[i] = byte(i / 64)
		}
	}
	return b
}

// Deflate is data as a raw DEFLATE stream.
func Deflate(data []byte) []byte {
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestCompression)
	must(err)
	w.Write(data)
	must(w.Close())
	return buf.Bytes()
}

// ZeroBomb is a raw DEFLATE stream of n MiB of zeros (about 1 KiB per MiB),
// made without inflating it: the stream of the second MiB, compressed
// with a window of zeros and flushed to a byte boundary, decodes the same
// wherever the window is zeros, so it is repeated.
func ZeroBomb(mib int) []byte {
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestCompression)
	must(err)
	zeros := make([]byte, 1<<20)
	w.Write(zeros)
	must(w.Flush())
	first := bytes.Clone(buf.Bytes())
	buf.Reset()
	w.Write(zeros)
	must(w.Flush())
	again := bytes.Clone(buf.Bytes())
	buf.Reset()
	must(w.Close())
	out := append([]byte{}, first...)
	for i := 1; i < mib; i++ {
		out = append(out, again...)
	}
	return append(out, buf.Bytes()...)
}

// WideNPY is a .npy member of an empty record array of n int32 fields,
// whose header is about 17 bytes per field: parsed, and as header.json,
// it takes about 40 times that in memory, and deflated a tenth of it in
// the archive.
func WideNPY(n int) []byte {
	var b strings.Builder
	b.WriteString("{'descr': [")
	for i := range n {
		fmt.Fprintf(&b, "('f%d', '<i4'), ", i)
	}
	b.WriteString("], 'fortran_order': False, 'shape': (0,), }")
	return NPYDict(2, b.String(), nil)
}

// Good members that stand beside the hostile ones in most cases.
var (
	storedRaw   = Bytes(8000, 1)
	deflatedRaw = Bytes(12000, 2)
	StoredNPY   = NPY("<i8", []int64{1000}, storedRaw)
	DeflatedNPY = NPY("<f4", []int64{3000}, deflatedRaw)
)

func goodMembers() []Member {
	return []Member{
		{Name: "s.npy", Data: StoredNPY},
		{Name: "d.npy", Data: DeflatedNPY, Deflate: true},
	}
}

// goodFiles are the files goodMembers serve.
func goodFiles() map[string][]byte {
	return map[string][]byte{
		"s.npy": StoredNPY, "s/raw.bin": storedRaw,
		"d.npy": DeflatedNPY, "d/raw.bin": deflatedRaw,
	}
}

func with(m map[string][]byte, kv ...any) map[string][]byte {
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].([]byte)
	}
	return m
}

// raw is a member written with CreateRaw: compressed bytes and a header
// that may lie.
func raw(name string, method uint16, flags uint16, comp []byte, size uint64, crc uint32) Member {
	return Member{Name: name, Raw: comp, Header: &zip.FileHeader{
		Method: method, Flags: flags, CRC32: crc,
		CompressedSize64: uint64(len(comp)), UncompressedSize64: size,
	}}
}

// endOf is the offset of the end of central directory record of a zip
// written by Zip (no comment).
func endOf(z []byte) int { return len(z) - 22 }

// cdOf is the central directory offset the end record gives.
func cdOf(z []byte) int { return int(binary.LittleEndian.Uint32(z[endOf(z)+16:])) }

// centralEntry is the offset of the central directory entry named name.
func centralEntry(z []byte, name string) int {
	i := cdOf(z)
	for i+46 <= len(z) && binary.LittleEndian.Uint32(z[i:]) == 0x02014b50 {
		n, e, c := int(binary.LittleEndian.Uint16(z[i+28:])), int(binary.LittleEndian.Uint16(z[i+30:])), int(binary.LittleEndian.Uint16(z[i+32:]))
		if string(z[i+46:i+46+n]) == name {
			return i
		}
		i += 46 + n + e + c
	}
	panic("no central entry " + name)
}

// localEntry is the offset of name's local header.
func localEntry(z []byte, name string) int {
	return int(binary.LittleEndian.Uint32(z[centralEntry(z, name)+42:]))
}

func patch(z []byte, f func(b []byte)) []byte {
	b := bytes.Clone(z)
	f(b)
	return b
}

func put16(b []byte, off int, v uint16) { binary.LittleEndian.PutUint16(b[off:], v) }
func put32(b []byte, off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }

// WriteSparseDirectory writes to path an archive of the two good members
// whose end record claims a central directory hole bytes longer than it
// is: after the real entries come hole bytes of zeros, left as a hole in
// the file (sparse: they take no disk space). The archive opens, its
// directory ends early. It returns the files served.
func WriteSparseDirectory(path string, hole int64) (map[string][]byte, error) {
	z := Zip(goodMembers())
	end := bytes.Clone(z[endOf(z):])
	binary.LittleEndian.PutUint32(end[12:], uint32(int64(len(z)-22-cdOf(z))+hole))
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(z[:endOf(z)])
	if err == nil {
		_, err = f.WriteAt(end, int64(endOf(z))+hole)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return goodFiles(), err
}

// Cases returns every hostile archive, built once: callers must not
// change them.
func Cases() []Case { return cases() }

var cases = sync.OnceValue(buildCases)

func buildCases() []Case {
	base := Zip(goodMembers())
	var cs []Case
	cs = append(cs, refusedCases(base)...)
	cs = append(cs, directoryCases(base)...)
	cs = append(cs, localHeaderCases(base)...)
	cs = append(cs, streamCases(base)...)
	cs = append(cs, nameCases(base)...)
	cs = append(cs, methodCases(base)...)
	return cs
}

// smallNPY is a .npy of ten int32.
func smallNPY() []byte { return NPY("<i4", []int64{10}, Bytes(40, 3)) }

// refusedCases are the archives refused whole: cut short, or an end record that lies.
func refusedCases(base []byte) []Case {
	var cs []Case
	// The archive cut short: whatever the cut, the end record is gone.
	for _, cut := range []int{0, 1, len(base) / 4, len(base) / 2, 3 * len(base) / 4, len(base) - 22, len(base) - 5, len(base) - 1} {
		cs = append(cs, Case{Name: fmt.Sprintf("truncated-to-%d", cut), Archive: base[:cut], Refused: true})
	}
	cs = append(cs,
		Case{Name: "empty-file", Archive: nil, Refused: true},
		Case{Name: "end-record-signature", Archive: patch(base, func(b []byte) { b[endOf(b)] ^= 0xff }), Refused: true},
		Case{Name: "end-offset-past-end", Archive: patch(base, func(b []byte) { put32(b, endOf(b)+16, uint32(len(b))) }), Refused: true},
		Case{Name: "end-offset-off-by-one", Archive: patch(base, func(b []byte) { put32(b, endOf(b)+16, uint32(cdOf(b)+1)) }), Refused: true},
		Case{Name: "first-central-signature", Archive: patch(base, func(b []byte) { b[cdOf(b)+2] ^= 0x40 }), Refused: true},
	)
	return cs
}

// directoryCases are end records and central directories that lie.
func directoryCases(base []byte) []Case {
	var cs []Case
	// The end record lies about the count, or points at the second entry.
	cs = append(cs, Case{
		Name:     "end-count-lies",
		Archive:  patch(base, func(b []byte) { put16(b, endOf(b)+8, 9); put16(b, endOf(b)+10, 9) }),
		Good:     goodFiles(),
		Problems: []string{"claims 9 entries"},
	})
	cs = append(cs, Case{
		Name: "end-offset-skips-first",
		Archive: patch(base, func(b []byte) {
			second := centralEntry(b, "d.npy")
			put32(b, endOf(b)+12, uint32(endOf(b)-second))
			put32(b, endOf(b)+16, uint32(second))
		}),
		Good:     map[string][]byte{"d.npy": DeflatedNPY, "d/raw.bin": deflatedRaw},
		Absent:   []string{"s.npy", "s"},
		Problems: []string{"claims 2 entries"},
	})

	// Bytes flipped in the central directory.
	cs = append(cs, Case{
		Name:     "central-second-signature",
		Archive:  patch(base, func(b []byte) { b[centralEntry(b, "d.npy")+1] ^= 0x20 }),
		Good:     map[string][]byte{"s.npy": StoredNPY, "s/raw.bin": storedRaw},
		Absent:   []string{"d.npy", "d"},
		Problems: []string{"ends early"},
	}, Case{
		Name:    "central-method",
		Archive: patch(base, func(b []byte) { put16(b, centralEntry(b, "s.npy")+10, 0x63) }),
		Good:    map[string][]byte{"d.npy": DeflatedNPY, "d/raw.bin": deflatedRaw},
		Bad:     []string{"s.npy"},
		Empty:   []string{"s"},
		Reasons: map[string]string{"s.npy": "method 99"},
	}, Case{
		Name:    "central-crc",
		Archive: patch(base, func(b []byte) { b[centralEntry(b, "d.npy")+16] ^= 1 }),
		Good:    map[string][]byte{"s.npy": StoredNPY, "s/raw.bin": storedRaw},
		Bad:     []string{"d.npy", "d/raw.bin"},
	}, Case{
		Name:    "central-local-offset",
		Archive: patch(base, func(b []byte) { put32(b, centralEntry(b, "d.npy")+42, uint32(localEntry(b, "d.npy")+3)) }),
		Good:    map[string][]byte{"s.npy": StoredNPY, "s/raw.bin": storedRaw},
		Bad:     []string{"d.npy"},
		Empty:   []string{"d"},
		Reasons: map[string]string{"d.npy": "local header"},
	}, Case{
		Name:    "central-offset-to-other-member",
		Archive: patch(base, func(b []byte) { put32(b, centralEntry(b, "d.npy")+42, uint32(localEntry(b, "s.npy"))) }),
		Good:    map[string][]byte{"s.npy": StoredNPY, "s/raw.bin": storedRaw},
		Bad:     []string{"d.npy"},
		Empty:   []string{"d"},
		Reasons: map[string]string{"d.npy": "local header"},
	}, Case{
		// A size that cannot be right is known from the directory alone:
		// the member is left out rather than served with a lying size.
		Name:    "central-stored-size",
		Archive: patch(base, func(b []byte) { put32(b, centralEntry(b, "s.npy")+24, uint32(len(StoredNPY)+1)) }),
		Good:    map[string][]byte{"d.npy": DeflatedNPY, "d/raw.bin": deflatedRaw},
		Absent:  []string{"s.npy", "s"},
		Reasons: map[string]string{"s.npy": "its size cannot be right"},
	})
	return cs
}

// localHeaderCases are local headers and npy headers with bytes flipped.
func localHeaderCases(base []byte) []Case {
	var cs []Case
	// Bytes flipped in a local header.
	cs = append(cs, Case{
		Name:    "local-signature",
		Archive: patch(base, func(b []byte) { b[localEntry(b, "s.npy")] ^= 0xff }),
		Good:    map[string][]byte{"d.npy": DeflatedNPY, "d/raw.bin": deflatedRaw},
		Bad:     []string{"s.npy"},
		Empty:   []string{"s"},
		Reasons: map[string]string{"s.npy": "local header"},
	}, Case{
		// A shorter name length would shift the data by a byte: the
		// local name no longer matches the central directory's.
		Name:    "local-name-length",
		Archive: patch(base, func(b []byte) { put16(b, localEntry(b, "s.npy")+26, 4) }),
		Good:    map[string][]byte{"d.npy": DeflatedNPY, "d/raw.bin": deflatedRaw},
		Bad:     []string{"s.npy"},
		Empty:   []string{"s"},
		Reasons: map[string]string{"s.npy": "local header"},
	}, Case{
		Name:    "local-name-byte",
		Archive: patch(base, func(b []byte) { b[localEntry(b, "d.npy")+30] = 'x' }),
		Good:    map[string][]byte{"s.npy": StoredNPY, "s/raw.bin": storedRaw},
		Bad:     []string{"d.npy"},
		Empty:   []string{"d"},
		Reasons: map[string]string{"d.npy": "local header"},
	}, Case{
		Name:    "local-extra-length-past-end",
		Archive: patch(base, func(b []byte) { put16(b, localEntry(b, "d.npy")+28, 0xffff) }),
		Good:    map[string][]byte{"s.npy": StoredNPY, "s/raw.bin": storedRaw},
		Bad:     []string{"d.npy"},
		Empty:   []string{"d"},
	})

	// Bytes flipped in an npy header: the member is served as it is, without
	// views.
	flipped := bytes.Replace(StoredNPY, []byte("'descr'"), []byte("'descx'"), 1)
	cs = append(cs, Case{
		Name:    "npy-header-flip",
		Archive: Zip([]Member{{Name: "s.npy", Data: flipped}, goodMembers()[1]}),
		Good:    map[string][]byte{"s.npy": flipped, "d.npy": DeflatedNPY, "d/raw.bin": deflatedRaw},
		Empty:   []string{"s"},
		Reasons: map[string]string{"s.npy": "no views"},
	})
	return cs
}

// streamCases are deflate streams and npy headers that lie, and headers too long to read.
func streamCases(base []byte) []Case {
	var cs []Case
	// Deflate streams that lie.
	small := smallNPY()
	smallDeflated := Deflate(small)
	cs = append(cs, Case{
		Name:    "zip-bomb",
		Archive: Zip(append(goodMembers(), raw("bomb.npy", zip.Deflate, 0, ZeroBomb(1024), 1024, 0))),
		Good:    goodFiles(),
		Bad:     []string{"bomb.npy"},
		Empty:   []string{"bomb"},
		Reasons: map[string]string{"bomb.npy": "no views"},
	}, Case{
		Name:    "deflate-ends-early",
		Archive: Zip(append(goodMembers(), raw("short.npy", zip.Deflate, 0, Deflate(DeflatedNPY)[:600], uint64(len(DeflatedNPY)), crc32.ChecksumIEEE(DeflatedNPY)))),
		Good:    goodFiles(),
		Bad:     []string{"short.npy", "short/raw.bin"},
	}, Case{
		Name:    "crc-mismatch",
		Archive: Zip(append(goodMembers(), raw("crc.npy", zip.Deflate, 0, smallDeflated, uint64(len(small)), crc32.ChecksumIEEE(small)^1))),
		Good:    goodFiles(),
		Bad:     []string{"crc.npy", "crc/raw.bin"},
	}, Case{
		Name:    "stored-claims-1TiB",
		Archive: Zip(append(goodMembers(), Member{Name: "huge.npy", Raw: small, Header: &zip.FileHeader{Method: zip.Store, CompressedSize64: 1 << 40, UncompressedSize64: 1 << 40}})),
		Good:    goodFiles(),
		Absent:  []string{"huge.npy", "huge"},
		Reasons: map[string]string{"huge.npy": "runs past the end"},
	}, Case{
		Name:    "deflated-claims-1TiB",
		Archive: Zip(append(goodMembers(), raw("huge.npy", zip.Deflate, 0, smallDeflated, 1<<40, crc32.ChecksumIEEE(small)))),
		Good:    goodFiles(),
		Absent:  []string{"huge.npy", "huge"},
		Reasons: map[string]string{"huge.npy": "more than deflate can make"},
	}, Case{
		// Declaring what deflate can just make of its bytes is not
		// impossible: served, and reads fail where the stream ends.
		Name:    "deflated-claims-1032x",
		Archive: Zip(append(goodMembers(), raw("big.npy", zip.Deflate, 0, smallDeflated, uint64(len(smallDeflated))*1032, crc32.ChecksumIEEE(small)))),
		Good:    goodFiles(),
		Bad:     []string{"big.npy", "big/raw.bin"},
	}, Case{
		// A script before the zip, without zip -A: read shifted.
		Name:     "prepended-script",
		Archive:  append([]byte("#!/bin/sh\necho self-extracting\nexit 0\n"), base...),
		Good:     goodFiles(),
		Problems: []string{"bytes precede the zip data"},
	})

	// npy headers that lie.
	hlen4G := NPYDict(2, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", nil)[:12]
	binary.LittleEndian.PutUint32(hlen4G[8:], 0xffffffff)
	hlen4G = append(hlen4G, Bytes(188, 4)...)
	overflow := NPYDict(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", Bytes(64, 5))
	deep := NPYDict(2, "{'descr': "+strings.Repeat("[('a', ", 5000)+"'<f4'"+strings.Repeat(")]", 5000)+", 'fortran_order': False, 'shape': (1,), }", Bytes(4, 6))
	cs = append(cs, Case{
		Name:    "npy-header-lies",
		Archive: Zip(append(goodMembers(), Member{Name: "hlen.npy", Data: hlen4G}, Member{Name: "overflow.npy", Data: overflow, Deflate: true}, Member{Name: "deep.npy", Data: deep, Deflate: true})),
		Good:    with(goodFiles(), "hlen.npy", hlen4G, "overflow.npy", overflow, "deep.npy", deep),
		Empty:   []string{"hlen", "overflow", "deep"},
		Reasons: map[string]string{"hlen.npy": "header length", "overflow.npy": "no views", "deep.npy": "no views"},
	})

	// Headers of many record fields, past the 1 MiB npzfs reads by
	// default: the members are served, with empty views folders, and no
	// header is parsed. (Shorter wide headers, like the format 2.0 ones
	// numpy writes, are parsed one at a time: see npz's
	// TestViewsNeedNoBudget.)
	var wide []Member
	wideGood := goodFiles()
	var wideEmpty []string
	for i := range 16 {
		m := Member{Name: fmt.Sprintf("w%02d.npy", i), Data: WideNPY(60000), Deflate: true}
		wide = append(wide, m)
		wideGood[m.Name] = m.Data
		wideEmpty = append(wideEmpty, strings.TrimSuffix(m.Name, ".npy"))
	}
	cs = append(cs, Case{
		Name:    "wide-headers",
		Archive: Zip(append(goodMembers(), wide...)),
		Good:    wideGood,
		Empty:   wideEmpty,
		Reasons: map[string]string{"w00.npy": "header length"},
	})
	return cs
}

// nameCases are names that cannot be served, and mode bits.
func nameCases(base []byte) []Case {
	var cs []Case
	// Names of 64 KiB of "a/": each would make 32,000 folders.
	var deepNames []Member
	for i := range 8 {
		deepNames = append(deepNames, Member{Name: fmt.Sprintf("d%d/", i) + strings.Repeat("a/", 32000) + "x.npy", Data: []byte("x")})
	}
	cs = append(cs, Case{
		Name:    "deep-names",
		Archive: Zip(append(goodMembers(), deepNames...)),
		Good:    goodFiles(),
		Absent:  []string{"d0", "d7"},
		Reasons: map[string]string{deepNames[0].Name: "4,095"},
	})

	// Names.
	long := strings.Repeat("n", 256) + ".npy"
	nm := func(name string, seed int64) Member {
		return Member{Name: name, Data: NPY("|u1", []int64{5}, Bytes(5, seed))}
	}
	names := Zip([]Member{
		nm("../x.npy", 10), nm("/abs.npy", 11), nm("a/../../b.npy", 12), nm("./x.npy", 13),
		nm("c//d.npy", 14), nm(`back\slash.npy`, 15), nm("caf\xe9.npy", 16), nm(long, 17),
		nm("dup.npy", 18), nm("dup.npy", 19), nm("a", 20), nm("a/b.npy", 21),
		nm("k.npy", 22), nm("k/header.json", 23), nm("k/raw.bin", 24), nm("cp437\x82.npy", 25),
	})
	names = patch(names, func(b []byte) {
		// A second invalid name, flagged as UTF-8 this time.
		i := centralEntry(b, "caf\xe9.npy")
		put16(b, i+8, binary.LittleEndian.Uint16(b[i+8:])|1<<11)
	})
	data := func(seed int64) []byte { return NPY("|u1", []int64{5}, Bytes(5, seed)) }
	cs = append(cs, Case{
		Name:    "names",
		Archive: names,
		Good: map[string][]byte{
			"abs.npy": data(11), "x.npy": data(13), "c/d.npy": data(14), `back\slash.npy`: data(15),
			"dup.npy": data(19), "a/b.npy": data(21), "k.npy": data(22), "k/header.json": data(23), "k/raw.bin": data(24),
			"abs/raw.bin": Bytes(5, 11), "a/b/raw.bin": Bytes(5, 21), "cp437é.npy": data(25),
		},
		Absent: []string{"b.npy", "caf\xe9.npy", "cafΘ.npy", long, "a.npy"},
		Reasons: map[string]string{
			"../x.npy": "'..'", "a/../../b.npy": "'..'", "caf\xe9.npy": "UTF-8", long: "longer than 255",
			"dup.npy": "shadowed", "a": "shadowed", "k.npy": "no views",
		},
	})

	// Mode bits are ignored: a symlink member is a file holding its target.
	cs = append(cs, Case{
		Name: "modes",
		Archive: Zip(append(goodMembers(),
			Member{Name: "link", Data: []byte("/etc/passwd"), Mode: fs.ModeSymlink | 0o777},
			Member{Name: "setuid.npy", Data: data(30), Mode: fs.ModeSetuid | 0o4755},
			Member{Name: "exec.sh", Data: []byte("#!/bin/sh\necho hi\n"), Mode: 0o755},
			Member{Name: "dev", Data: []byte("x"), Mode: fs.ModeDevice | fs.ModeCharDevice | 0o666},
			Member{Name: "fifo", Data: []byte("y"), Mode: fs.ModeNamedPipe | 0o666},
		)),
		Good: with(goodFiles(), "link", []byte("/etc/passwd"), "setuid.npy", data(30), "exec.sh", []byte("#!/bin/sh\necho hi\n"),
			"dev", []byte("x"), "fifo", []byte("y")),
	})
	return cs
}

// methodCases are methods npzfs cannot read, and encryption.
func methodCases(base []byte) []Case {
	var cs []Case
	small := smallNPY()
	// Methods npzfs cannot read, and encryption, beside good members.
	cs = append(cs, Case{
		Name: "methods",
		Archive: Zip(append(goodMembers(),
			raw("bzip2.npy", 12, 0, small, uint64(len(small)), crc32.ChecksumIEEE(small)),
			raw("lzma.npy", 14, 0, small, uint64(len(small)), crc32.ChecksumIEEE(small)),
			raw("encrypted.npy", zip.Store, 1, small, uint64(len(small)), crc32.ChecksumIEEE(small)),
			raw("notes.txt", 93, 0, []byte("zstd?"), 5, 0),
		)),
		Good:    goodFiles(),
		Bad:     []string{"bzip2.npy", "lzma.npy", "encrypted.npy", "notes.txt"},
		Empty:   []string{"bzip2", "lzma", "encrypted"},
		Reasons: map[string]string{"bzip2.npy": "bzip2", "lzma.npy": "lzma", "encrypted.npy": "encrypted", "notes.txt": "zstd"},
	})
	return cs
}

// Unreadable is an archive of three members: good.txt, served and read;
// lzma.npy (method 14), served but unreadable; and ../escape.txt, not
// served. It is what the commands' diagnostics are tested on.
func Unreadable() []byte {
	return Zip([]Member{
		{Name: "good.txt", Data: []byte("some bytes")},
		{Name: "../escape.txt", Data: []byte("bytes")},
		raw("lzma.npy", 14, 0, []byte("junk"), 10, 0),
	})
}
