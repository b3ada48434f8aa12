package layers

import (
	"bufio"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// module is this module's path.
const module = "github.com/npzfs/npzfs"

// backticked are the names in backticks of a table cell.
var backticked = regexp.MustCompile("`([^`]+)`")

// designRows reads DESIGN.md's table of packages: for each package of
// the module a row names (its first cell), the module's packages its
// last cell says it imports (each in backticks; stdlib and other
// modules are not checked).
func designRows(t *testing.T, root string, packages map[string]bool) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) < 3 {
			continue
		}
		var allowed []string
		for _, m := range backticked.FindAllStringSubmatch(cells[len(cells)-1], -1) {
			if packages[m[1]] {
				allowed = append(allowed, m[1])
			}
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			rows[m[1]] = append(rows[m[1]], allowed...)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// imports lists the module's packages, as GOOS=goos builds them, each
// with the module's packages it imports (tests left out: a test may
// use any helper).
func imports(t *testing.T, root, goos string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		name := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		var own []string
		for _, imp := range fields[1:] {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				own = append(own, rel)
			}
		}
		pkgs[name] = own
	}
	return pkgs
}

// TestLayers: every package of the module has a row in DESIGN.md's
// table, imports none of the module's packages its row does not name,
// and every row names a package that exists; on Linux and on the other
// systems the binary is built for.
func TestLayers(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen, missing := map[string]bool{}, map[string]bool{}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		pkgs := imports(t, root, goos)
		names := map[string]bool{}
		for p := range pkgs {
			names[p] = true
			seen[p] = true
		}
		rows := designRows(t, root, names)
		for p, own := range pkgs {
			allowed, ok := rows[p]
			if !ok {
				missing[p] = true
				continue
			}
			for _, imp := range own {
				if !slices.Contains(allowed, imp) {
					t.Errorf("%s (GOOS=%s) imports %s, which its row of DESIGN.md does not name", p, goos, imp)
				}
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(missing)) {
		t.Errorf("DESIGN.md's table has no row for %s", p)
	}
	all := map[string]bool{}
	for p := range seen {
		all[p] = true
	}
	for p := range designRows(t, root, all) {
		if !seen[p] && !strings.HasSuffix(p, "/") && !strings.Contains(p, ".") {
			t.Errorf("DESIGN.md's table has a row for %s, which is no package", p)
		}
	}
}
