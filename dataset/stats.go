package dataset

// Stats are what a dataset has done since it was opened: what npzfs
// status shows of a mount, counters as values. Every count is since Open.
type Stats struct {
	Source string
	Kind   string // "archive", "npy" or "folder"
	// Members and Failing count an archive's (or a .npy's) members, and
	// those not served or whose reads fail (known from the directory, or
	// found by a read or a verification); nil for a folder.
	Members *int
	Failing *int
	// SpanCache is the cache of inflated spans of deflated members.
	SpanCache CacheStats
	// Indexes count the saved indexes loaded, refused and saved, when
	// there is an index folder.
	Indexes *IndexesStats
	// Remote is the remote sources', for a remote dataset (a remote
	// folder's archives' and sidecars' together).
	Remote *RemoteStats
}

// CacheStats are the span cache's lookups and size.
type CacheStats struct {
	Hits   int64
	Misses int64
	Bytes  int64
	Budget int64
}

// IndexesStats count what was done with the index folder.
type IndexesStats struct {
	Folder  string
	Loaded  int64 // handed to a member (a sidecar's too)
	Refused int64 // of those, found not to belong and dropped
	Saved   int64 // complete indexes written
}

// RemoteStats count a remote source's requests and blocks.
type RemoteStats struct {
	Requests       int64
	Retries        int64
	BytesFetched   int64
	BlockHits      int64
	BlockMisses    int64
	DiskHits       int64
	MemoryBytes    int64
	DiskCacheBytes int64 // the whole disk cache folder's
	Listings       int64 // a remote folder's, each one or more requests
}

// Stats reports what the dataset has done so far.
func (d *Dataset) Stats() Stats {
	st := Stats{Source: d.name, Kind: [...]string{Archive: "archive", NPY: "npy", Folder: "folder"}[d.kind]}
	if a := d.archive; a != nil {
		members, failing := a.Len(), 0
		for m := range a.All() {
			if !m.Served() || m.ReadError() != nil || m.Failure() != nil {
				failing++
			}
		}
		st.Members, st.Failing = &members, &failing
	}
	if c := d.cache; c != nil {
		st.SpanCache.Hits, st.SpanCache.Misses = c.Lookups()
		st.SpanCache.Bytes, st.SpanCache.Budget = c.Used(), c.Budget()
	}
	if s := d.store; s != nil {
		is := s.Stats()
		st.Indexes = &IndexesStats{Folder: s.Path(), Loaded: is.Loaded, Refused: is.Refused, Saved: is.Saved}
	}
	if g := d.group; g != nil {
		rs := g.Stats()
		st.Remote = &RemoteStats{
			Requests: rs.Requests, Retries: rs.Retries, BytesFetched: rs.BytesFetched,
			BlockHits: rs.BlockHits, BlockMisses: rs.BlockMisses, DiskHits: rs.DiskHits,
			MemoryBytes: rs.CachedBytes, DiskCacheBytes: rs.DiskBytes,
		}
		if d.listing != nil {
			st.Remote.Listings = d.listing.Listings()
		}
	}
	return st
}
