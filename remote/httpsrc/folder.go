package httpsrc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/npzfs/npzfs/remote"
)

// A folder's URL given without its trailing "/" is answered, by nginx,
// Apache and most static servers, with a redirect to the URL with it
// (which Go's client follows, to a listing or a refusal), and by a few
// with the folder's listing itself: what edge tells from an archive that
// is not there, or a server that ignores byte ranges.

// errFolder says that b's URL names a folder, as s3src says of a prefix.
func (b *Backend) errFolder() error {
	return remote.Permanent(fmt.Errorf("%s is not an archive but a folder: give it with a trailing / (%s/) to serve it as a folder, or name an archive in it, as %s/NAME.npz", b.shown, b.shown, b.shown))
}

// movedToFolder reports an answer that came from asked's URL with a "/"
// added to its path: the server redirected there (followed or not).
func movedToFolder(asked *url.URL, resp *http.Response) bool {
	final := resp.Request.URL
	if loc, err := resp.Location(); err == nil && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		final = loc
	}
	return final.Path == asked.Path+"/"
}

// isListing reports a 200 whose body is a folder's listing: JSON that
// begins as a listing does (see Lister), or an HTML page titled as the
// listings of nginx, Apache and Python's http.server are ("Index of
// /PATH", "Directory listing for /PATH"). Only the body's start is read.
func isListing(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		d := json.NewDecoder(io.LimitReader(resp.Body, 64<<10))
		if tok, err := d.Token(); err != nil || tok != json.Delim('[') {
			return false
		}
		if !d.More() {
			return true // an empty folder's listing
		}
		var e listEntry
		return d.Decode(&e) == nil && e.Name != "" && (e.Type == "file" || e.Type == "directory")
	case "text/html":
		head, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		head = bytes.ToLower(head)
		_, title, ok := bytes.Cut(head, []byte("<title>"))
		return ok && (bytes.HasPrefix(title, []byte("index of ")) || bytes.HasPrefix(title, []byte("directory listing for ")))
	}
	return false
}

// htmlPage reports a 200 of an HTML page where an archive was asked for
// (a login or error page, say): not the object's bytes.
func htmlPage(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return strings.EqualFold(mt, "text/html")
}
