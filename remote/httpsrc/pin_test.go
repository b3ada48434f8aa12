package httpsrc

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/npzfs/npzfs/source"
)

// TestPinnedByTime: an object served with no ETag is pinned by its
// Last-Modified. A server that refuses If-Unmodified-Since (412) for an
// unchanged object is said to, not taken for a change; for a changed one
// the change is said, from what a HEAD says of it. A server that ignores
// the condition never mixes a replaced object's bytes in: each answer's
// Last-Modified is checked.
func TestPinnedByTime(t *testing.T) {
	for _, refuse := range []bool{true, false} {
		data := randomBytes(100000, 11)
		obj := &object{data: data, modTime: time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)}
		var heads atomic.Int64
		srv, _ := server(t, obj, func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodHead {
				heads.Add(1)
			}
			if r.Header.Get("If-Unmodified-Since") == "" {
				return false
			}
			if refuse {
				w.WriteHeader(http.StatusPreconditionFailed)
				return true
			}
			r.Header.Del("If-Unmodified-Since")
			return false
		})
		s, err := openURL(t, srv.URL+"/a.npz", nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.ReadAt(make([]byte, 10), 0)
		if refuse {
			want := srv.URL + "/a.npz: the server refused a read's condition (HTTP 412 to If-Unmodified-Since: Tue, 04 Mar 2025 05:06:07 GMT, the Last-Modified it sent at open; it sends no ETag to pin reads to), though the object has not changed"
			if err == nil || errors.Is(err, source.ErrChanged) || !strings.HasPrefix(err.Error(), want) || heads.Load() != 1 {
				t.Errorf("refused, unchanged: %v (%d HEADs), want %q...", err, heads.Load(), want)
			}
		} else if err != nil {
			t.Fatalf("a server that ignores the condition: %v", err)
		}
		obj.set(data, "") // an hour later
		_, err = s.ReadAt(make([]byte, 10), 50000)
		want := srv.URL + "/a.npz: the archive changed after it was opened (Last-Modified Tue, 04 Mar 2025 06:06:07 GMT, was Tue, 04 Mar 2025 05:06:07 GMT)"
		if refuse {
			want = srv.URL + "/a.npz: the archive changed after it was opened (it was 100000 bytes of Tue, 04 Mar 2025 05:06:07 GMT, it is 100000 bytes of Tue, 04 Mar 2025 06:06:07 GMT)"
		}
		if !errors.Is(err, source.ErrChanged) || err.Error() != want {
			t.Errorf("refuse %v, changed: %v, want %q", refuse, err, want)
		}
	}
}
