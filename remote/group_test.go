package remote

import (
	"context"
	"testing"
)

// TestGroupStats: a group's sources share its cache, and its Stats add
// up what they did, those closed since too.
func TestGroupStats(t *testing.T) {
	g := NewGroup(&Options{CacheBytes: 1 << 20})
	a, err := g.Open(context.Background(), newFake(300<<10), Options{BlockSize: 64 << 10, TailBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	b, err := g.Open(context.Background(), newFake(200<<10), Options{BlockSize: 64 << 10, TailBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	for _, s := range []*Source{a, b} {
		if _, err := s.ReadAt(buf, 0); err != nil {
			t.Fatal(err)
		}
	}
	sa, sb := a.Stats(), b.Stats()
	if st := g.Stats(); st.Requests != sa.Requests+sb.Requests || st.BytesFetched != sa.BytesFetched+sb.BytesFetched || st.CachedBytes == 0 {
		t.Errorf("group %+v, sources %+v and %+v", st, sa, sb)
	}
	a.Close()
	if st := g.Stats(); st.Requests != sa.Requests+sb.Requests || st.BlockMisses != sa.BlockMisses+sb.BlockMisses {
		t.Errorf("after a source closed: %+v, want the counts of both", st)
	}
	b.Close()
	b.Close() // counted once
	if st := g.Stats(); st.Requests != sa.Requests+sb.Requests || st.CachedBytes != 0 {
		t.Errorf("after both closed: %+v", st)
	}
}
