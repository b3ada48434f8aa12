package serve

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"sync"
)

// Error codes (docs/serve.md).
const (
	codeFrame      = "frame"      // a frame refused
	codeRequest    = "request"    // a request that is not what its kind needs
	codeKind       = "kind"       // an unknown request kind
	codeVersion    = "version"    // a hello of a version the server does not speak
	codeMember     = "member"     // no member of that index
	codeRange      = "range"      // bytes or members past the end
	codeUnreadable = "unreadable" // a member no byte of which can be read
	codeRead       = "read"       // a read that failed
	codeCancelled  = "cancelled"  // cancelled by cancel or close, or the input ended
	codeBusy       = "busy"       // MaxPending requests in flight already
)

// writer writes whole frames to the client, one at a time; after a
// failed write it writes nothing more.
type writer struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// failed is the error of the first write that failed, or nil.
func (w *writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// write writes b, a whole frame.
func (w *writer) write(b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
}

// send writes a frame whose meta is v, as JSON, and whose data is data.
func (w *writer) send(v any, data []byte) {
	meta, err := marshal(v)
	if err != nil {
		// Every reply is made of strings and numbers: this is a bug.
		panic(err)
	}
	b := make([]byte, headerLen, headerLen+len(meta)+len(data))
	putHeader(b, len(meta), len(data))
	b = append(append(b, meta...), data...)
	w.write(b)
}

// marshal is v as JSON, with <, > and & as they are (names may hold
// them).
func marshal(v any) ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(b.String(), "\n")), nil
}

// errorReply is the meta of an error reply.
type errorReply struct {
	ID      uint64 `json:"id"`
	Kind    string `json:"kind"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Member  *int   `json:"member,omitempty"`
	Name    string `json:"name,omitempty"`
}

// about names the member an error reply is about.
type about struct {
	index int
	name  string
}

// fail sends an error reply to request id (0 when the request's id is
// not known), about a member when m is not nil; the message is made one
// line.
func (s *server) fail(id uint64, code, msg string, m *about) {
	r := errorReply{ID: id, Kind: "error", Code: code, Message: oneLine(msg)}
	if m != nil {
		r.Member, r.Name = &m.index, m.name
	}
	s.out.send(r, nil)
}

// oneLine is s with its line breaks made spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// dataRoom is what a read's buffer keeps free before its bytes: room for
// the frame's header and meta, so that the whole frame goes out in one
// write without copying the bytes.
const dataRoom = 128

// sendData writes a data reply to request id: the bytes buf[dataRoom:]
// read at off of the member, the last reply to the request when last is
// set.
func (w *writer) sendData(id uint64, off int64, last bool, buf []byte) {
	var m [dataRoom]byte
	meta := strconv.AppendUint(append(m[:0], `{"id":`...), id, 10)
	meta = strconv.AppendInt(append(meta, `,"kind":"data","offset":`...), off, 10)
	meta = strconv.AppendBool(append(meta, `,"last":`...), last)
	meta = append(meta, '}')
	start := dataRoom - headerLen - len(meta)
	putHeader(buf[start:], len(meta), len(buf)-dataRoom)
	copy(buf[start+headerLen:], meta)
	w.write(buf[start:])
}
