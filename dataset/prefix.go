package dataset

import (
	"context"
	"fmt"

	"github.com/npzfs/npzfs/folder"
	"github.com/npzfs/npzfs/remote"
)

// openPrefix opens a remote folder, which a mount serves as it serves a
// local one: its top level is listed now, one request a page, and nothing
// else is asked for until it is looked at.
func (d *Dataset) openPrefix(ctx context.Context, url string, g *remote.Group, o *Options) error {
	l, err := newLister(ctx, url, &o.Remote)
	if err != nil {
		return err
	}
	// Its listings count against the group's block cache.
	ro := o.Remote.options(d.logf)
	ro.Cache = g.Cache()
	f := remote.NewFolder(l, o.Remote.ListTTL, ro)
	items, err := f.List(ctx, "")
	if err != nil {
		return err
	}
	if items.Len() == 0 {
		return fmt.Errorf("%s holds no object (check the prefix, or the folder's listing)", l)
	}
	d.kind, d.folder, d.listing = Folder, folder.NewRemote(f, g), f
	return nil
}
