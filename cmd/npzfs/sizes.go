package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/npzfs/npzfs/memplan"
)

// memoryFlags are the flags of mount and serve that size memory, in MiB:
// the target and its budgets (0, their default, is not given).
var memoryFlags = []string{"memory-mb", "cache-mb", "index-mb", "remote-cache-mb"}

// maxHeaderKB is the most --max-header-kb takes: a .npy header's length
// is a 32-bit number, so none is longer than 4 GiB.
const maxHeaderKB = 4 << 20

// sizeBound is the most the size flag --name takes, and what that bound
// is, for messages; ok is false for a flag that is no size. A memory
// size past the machine's memory (memplan.MaxBudget) would bound
// nothing; a folder's bound on disk past what an int64 of bytes holds
// (memplan.MaxMiB) would overflow.
func sizeBound(name string) (most int64, what string, ok bool) {
	switch name {
	case "memory-mb", "cache-mb", "index-mb", "remote-cache-mb":
		if most = memplan.MaxBudget() >> 20; most < memplan.MaxMiB {
			return most, "this machine's memory", true
		}
		return most, "the largest size npzfs counts", true
	case "disk-cache-mb", "index-cache-mb":
		return memplan.MaxMiB, "the largest size npzfs counts", true
	case "max-header-kb":
		return maxHeaderKB, "a .npy header can be (4 GiB)", true
	}
	return 0, "", false
}

// checkSize refuses the value v of the size flag --name below 1 or past
// its bound (sizeBound): one line naming the flag and the most it takes.
func checkSize(name string, v int) error {
	most, what, _ := sizeBound(name)
	switch {
	case v < 1:
		return fmt.Errorf("--%s must be at least 1", name)
	case int64(v) > most:
		return fmt.Errorf("--%s %d is more than %s: give at most %d", name, v, what, most)
	}
	return nil
}

// checkMemoryFlags checks the memory flags of fl that were given
// (checkSize).
func checkMemoryFlags(fl *pflag.FlagSet) error {
	for _, f := range memoryFlags {
		if v, _ := fl.GetInt(f); fl.Changed(f) {
			if err := checkSize(f, v); err != nil {
				return err
			}
		}
	}
	return nil
}
