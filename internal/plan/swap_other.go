//go:build !linux

package plan

// swapDirs replaces the old bundle at dir with the new one at tmp; see swapByRenames.
func swapDirs(tmp, dir string) error { return swapByRenames(tmp, dir) }
