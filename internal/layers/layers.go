// Package layers holds the test that keeps DESIGN.md's map of the
// layers true: each package of the module may import, of the module's
// own packages, only those its row of DESIGN.md's table names.
package layers
