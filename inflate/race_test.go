//go:build race

package inflate

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts mean little.
const raceEnabled = true
