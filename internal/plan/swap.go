package plan

import "os"

// swapByRenames replaces dir with tmp where no atomic exchange exists: the old bundle is renamed
// aside, the new one renamed in, and the old one moved to tmp for the caller to remove. Each step
// is a rename, so a crash leaves the old bundle whole beside dir, never deleted.
func swapByRenames(tmp, dir string) error {
	aside := tmp + ".old"
	if err := os.Rename(dir, aside); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.Rename(aside, dir)
		return err
	}
	return os.Rename(aside, tmp)
}
