package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/npzfs/npzfs/internal/suggest"
)

// unknownCommand says that name is no command, and which one it is
// probably a slip for (mout: mount), if any.
func unknownCommand(name string) string {
	candidates := append(commandNames(), "help")
	for a := range aliases {
		candidates = append(candidates, a)
	}
	if s := suggest.Closest(name, candidates); s != "" {
		return fmt.Sprintf("unknown command %q; did you mean %q?", name, s)
	}
	return fmt.Sprintf("unknown command %q", name)
}

// suggestFlag is what follows pflag's "unknown flag: --cache-mib": the
// closest flag of fl, as "; did you mean --cache-mb?", or "".
func suggestFlag(fl *pflag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	var names []string
	fl.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if s := suggest.Closest(name, names); s != "" {
		return "; did you mean --" + s + "?"
	}
	return ""
}
