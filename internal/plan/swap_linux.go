package plan

import (
	"errors"

	"golang.org/x/sys/unix"
)

// swapDirs exchanges the new bundle at tmp with the old one at dir in one atomic step
// (renameat2 RENAME_EXCHANGE): dir is never missing or half-written, whatever happens. The old
// bundle ends at tmp, for the caller to remove. Filesystems without the exchange fall back.
func swapDirs(tmp, dir string) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dir, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return swapByRenames(tmp, dir)
	}
	return err
}
