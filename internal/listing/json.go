package listing

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/npzfs/npzfs/npz"
)

// MemberJSON is one member in ls --json, documented in the README.
type MemberJSON struct {
	Name           string          `json:"name"`
	Path           string          `json:"path,omitempty"`
	State          string          `json:"state"`
	Folder         bool            `json:"folder,omitempty"`
	Method         string          `json:"method"`
	Encrypted      bool            `json:"encrypted,omitempty"`
	Size           int64           `json:"size"`
	CompressedSize int64           `json:"compressed_size"`
	CRC32          string          `json:"crc32"`
	DType          string          `json:"dtype,omitempty"`
	Descr          json.RawMessage `json:"descr,omitempty"`
	Shape          *[]int64        `json:"shape,omitempty"`         // [] for a 0-d array
	FortranOrder   *bool           `json:"fortran_order,omitempty"` // with shape
	Views          bool            `json:"views"`
	Reason         string          `json:"reason,omitempty"`
	ReadError      string          `json:"read_error,omitempty"`
	Verify         string          `json:"verify,omitempty"`
	SOZip          *SOZipJSON      `json:"sozip,omitempty"`
}

// SOZipJSON is what a member's SOZip index says, as header.json's
// "sozip" has it.
type SOZipJSON struct {
	ChunkSize int64 `json:"chunk_size"`
	Chunks    int   `json:"chunks"`
}

// JSON is an archive's listing in ls --json, documented in the README.
type JSON struct {
	Archive  string       `json:"archive"`
	Members  []MemberJSON `json:"members"`
	Problems []string     `json:"problems"`
	Counts   struct {
		Members    int `json:"members"`
		Served     int `json:"served"`
		Unreadable int `json:"unreadable"`
		Failed     int `json:"failed"`
		NotServed  int `json:"not_served"`
	} `json:"counts"`
}

// ArchivesJSON is the listing of several archives given to ls --json:
// each archive's, and the archives that could not be opened.
type ArchivesJSON struct {
	Archives []JSON      `json:"archives"`
	Errors   []ErrorJSON `json:"errors"`
}

// FolderJSON is a folder's listing in ls --json: its archives' (their
// names paths in the folder).
type FolderJSON struct {
	Folder string `json:"folder"`
	ArchivesJSON
}

// ErrorJSON is an archive that could not be opened.
type ErrorJSON struct {
	Archive string `json:"archive"`
	Error   string `json:"error"`
}

// JSON is the listing as ls --json gives it, for the archive named
// archive.
func (l *Listing) JSON(ctx context.Context, archive string) JSON {
	out := JSON{Archive: archive, Members: []MemberJSON{}, Problems: l.Archive.Problems()}
	if out.Problems == nil {
		out.Problems = []string{}
	}
	for _, r := range l.Rows {
		m := r.Member
		j := MemberJSON{
			Name: m.Name(), Path: m.Path(), State: r.State, Folder: m.IsDir(),
			Method: npz.MethodName(m.Method()), Encrypted: m.Encrypted(),
			Size: m.Size(), CompressedSize: m.CompressedSize(), CRC32: fmt.Sprintf("%08x", m.CRC32()),
			Views: m.HasViews(ctx), Reason: r.Reason, ReadError: r.ReadError,
		}
		if h := r.Header; h != nil {
			shape := h.Shape
			if shape == nil {
				shape = []int64{}
			}
			fortran := h.FortranOrder
			j.DType, j.Shape, j.FortranOrder = h.DType.Str(), &shape, &fortran
			if h.DType.Record || h.DType.Subarray != nil {
				j.Descr = descrJSON(ctx, m)
			}
		}
		if x := r.SOZip; x != nil {
			j.SOZip = &SOZipJSON{ChunkSize: x.ChunkSize, Chunks: x.Chunks}
		}
		if l.Checked && !m.IsDir() && m.Served() && r.ReadError == "" {
			j.Verify = "ok"
			if r.Verify != "" {
				j.Verify = r.Verify
			}
		}
		out.Members = append(out.Members, j)
	}
	out.Counts.Members = len(l.Rows)
	out.Counts.Served, out.Counts.Unreadable = l.Counts.Served+l.Counts.Folders, l.Counts.Unreadable
	out.Counts.Failed, out.Counts.NotServed = l.Counts.Failed, l.Counts.NotServed
	return out
}

// descrJSON is the member's descr as its header.json gives it, or nil.
func descrJSON(ctx context.Context, m *npz.Member) json.RawMessage {
	js, err := m.HeaderJSON(ctx)
	if err != nil {
		return nil
	}
	var h struct {
		Descr json.RawMessage `json:"descr"`
	}
	if json.Unmarshal(js, &h) != nil {
		return nil
	}
	return h.Descr
}
