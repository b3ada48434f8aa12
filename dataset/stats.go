package dataset

// Stats are what a dataset has done since it was opened: what npzfs
// status shows of a mount. Every count is since Open. The JSON form is
// documented in README.md ("npzfs status") and kept stable.
type Stats struct {
	Source string `json:"source"`
	Kind   string `json:"kind"` // "archive", "npy" or "folder"
	// Members and Failing count an archive's (or a .npy's) members, and
	// those not served or whose reads fail; ArchivesOpen counts a
	// folder's archives open now. Each is nil for the other kind.
	Members      *int `json:"members,omitempty"`
	Failing      *int `json:"members_failing,omitempty"`
	ArchivesOpen *int `json:"archives_open,omitempty"`
	// SpanCache is the cache of inflated spans of deflated members.
	SpanCache CacheStats `json:"span_cache"`
	// Indexes count the saved indexes loaded, refused and saved, when
	// there is an index folder.
	Indexes *IndexesStats `json:"saved_indexes,omitempty"`
	// Remote is the remote sources', for a remote dataset (a remote
	// folder's archives' and sidecars' together).
	Remote *RemoteStats `json:"remote,omitempty"`
	// Indexing is mount --index's progress, once it has started.
	Indexing *IndexingStats `json:"background_indexing,omitempty"`
}

// CacheStats are the span cache's lookups and size.
type CacheStats struct {
	Hits   int64 `json:"hits"`
	Misses int64 `json:"misses"`
	Bytes  int64 `json:"bytes"`
	Budget int64 `json:"budget"`
}

// IndexesStats count what was done with the index folder.
type IndexesStats struct {
	Folder  string `json:"folder"`
	Loaded  int64  `json:"loaded"`  // handed to a member (a sidecar's too)
	Refused int64  `json:"refused"` // of those, found not to belong and dropped
	Saved   int64  `json:"saved"`   // complete indexes written
}

// RemoteStats count a remote source's requests and blocks.
type RemoteStats struct {
	Requests       int64 `json:"requests"`
	Retries        int64 `json:"retries"`
	BytesFetched   int64 `json:"bytes_fetched"`
	BlockHits      int64 `json:"block_hits"`
	BlockMisses    int64 `json:"block_misses"`
	DiskHits       int64 `json:"disk_cache_hits"`
	MemoryBytes    int64 `json:"memory_cache_bytes"`
	DiskCacheBytes int64 `json:"disk_cache_bytes"`   // the whole disk cache folder's
	Listings       int64 `json:"listings,omitempty"` // a remote folder's, each one or more requests
}

// IndexingStats are background indexing's progress (indexer.InBackground),
// set by the mount.
type IndexingStats struct {
	Members     int     `json:"members"`
	MembersDone int     `json:"members_done"`
	Failed      int     `json:"members_failed"`
	Bytes       int64   `json:"bytes"`
	BytesDone   int64   `json:"bytes_done"`
	Rate        float64 `json:"bytes_per_second"`
	SecondsLeft float64 `json:"seconds_left"`
	Done        bool    `json:"done"`
}

// Stats reports what the dataset has done so far.
func (d *Dataset) Stats() Stats {
	st := Stats{Source: d.name, Kind: [...]string{Archive: "archive", NPY: "npy", Folder: "folder"}[d.kind]}
	if a := d.archive; a != nil {
		members, failing := a.Len(), 0
		for m := range a.All() {
			if !m.Served() || m.ReadError() != nil {
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
