//go:build !race

package npz

const raceEnabled = false
