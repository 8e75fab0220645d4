// Package exitcode holds the exit codes every gpucluster command shares: the CLI returns them,
// its --help and docs/cli.md explain them (cmd/gpucluster's exitCodes table), and the tests that
// run the built CLI read them.
package exitcode

const (
	OK         = 0
	Fail       = 1
	Usage      = 2
	NoVerdict  = 3
	Unreadable = 4
)
