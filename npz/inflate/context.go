package inflate

import (
	"context"
	"io"
)

// ContextReaderAt is implemented by compressed sources whose reads can be
// cancelled; a ReaderAt passes the context of ReadAtContext to them. (It
// has the shape of source.ContextReaderAt, without importing it.)
type ContextReaderAt interface {
	ReadAtContext(ctx context.Context, p []byte, off int64) (int, error)
}

// withContext binds ctx to the reads of src.
func withContext(ctx context.Context, src io.ReaderAt) io.ReaderAt {
	if ctx.Done() == nil { // never cancelled: read src as it is
		return src
	}
	return ctxReaderAt{ctx, src}
}

type ctxReaderAt struct {
	ctx context.Context
	src io.ReaderAt
}

func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if cr, ok := c.src.(ContextReaderAt); ok {
		return cr.ReadAtContext(c.ctx, p, off)
	}
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.src.ReadAt(p, off)
}
