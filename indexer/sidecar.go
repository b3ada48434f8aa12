package indexer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/npzfs/npzfs/folder"
	"github.com/npzfs/npzfs/npz"
	"github.com/npzfs/npzfs/remote"
)

// putSidecar puts the sidecar of x, a remote archive, beside it, in one
// request, and returns its name and whether it was written. A sidecar
// there already that holds a complete index of every member picked is
// kept (nothing is rebuilt or uploaded). Otherwise the put is
// conditional: where there was none, on there being none still
// (If-None-Match), so that of two machines indexing at once one puts it;
// over one, on its being the one seen (If-Match). A put that loses is no
// failure when the sidecar put meanwhile holds every index.
func putSidecar(ctx context.Context, x *indexed) (string, bool, error) {
	sb := folder.SidecarBeside(x.backend)
	if sb == nil {
		return x.backend.String(), false, errors.New("no sidecar can be put beside it")
	}
	name := sb.String()
	p, ok := sb.(remote.Putter)
	if !ok {
		return name, false, fmt.Errorf("%s: an HTTP server takes no upload: give --sidecar-file FILE to write the sidecar, and put it beside the archive by hand", name)
	}
	old, err := x.a.IndexSidecar(ctx)
	if err != nil {
		return name, false, err
	}
	if holdsAll(ctx, old, x.members) {
		return name, false, nil
	}
	var cond remote.PutCondition
	if old == nil {
		cond.IfNoneMatch = true
	} else if o, ok := old.Source().(interface{ Object() remote.Object }); ok {
		cond.IfMatch = o.Object().ETag
	}
	tmp, err := os.CreateTemp("", "npzfs-sidecar-*")
	if err != nil {
		return name, false, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := npz.WriteIndexSidecarTo(ctx, tmp, x.members); err != nil {
		return name, false, err
	}
	size, err := tmp.Seek(0, io.SeekCurrent)
	if err == nil {
		_, err = tmp.Seek(0, io.SeekStart)
	}
	if err != nil {
		return name, false, err
	}
	err = p.Put(ctx, tmp, size, cond)
	if !errors.Is(err, remote.ErrConflict) {
		return name, err == nil, err
	}
	// Another machine put one meanwhile: kept if it holds every index.
	if x.group != nil {
		if sc, _ := folder.SidecarFinder(x.group, x.backend).FindSidecar(ctx, 0); sc != nil {
			defer sc.Close()
			if holdsAll(ctx, sc, x.members) {
				return name, false, nil
			}
		}
	}
	return name, false, fmt.Errorf("%s: %w, and it lacks some of the indexes: run again to replace it", name, remote.ErrConflict)
}

// holdsAll reports whether sc holds a complete index of every member.
func holdsAll(ctx context.Context, sc *npz.IndexSidecar, members []*npz.Member) bool {
	if sc == nil {
		return false
	}
	for _, m := range members {
		if !sc.Holds(ctx, m) {
			return false
		}
	}
	return true
}
