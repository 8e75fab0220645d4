// Package prebuild holds one test package per heavy helper program of the test harnesses: each
// builds its program into the shared cache (internal/buildcache) and checks it runs. They exist
// for `go test ./...` on a fresh machine: go test kills a test binary 11 minutes after it starts
// (its 10-minute timeout and one more), and a test binary that waited for every cold build would
// not survive them. These packages compile in seconds, start early, and each builds one program
// well inside that limit; the packages that use the programs (kubeapi, infra/program, realengine)
// then find them built, or wait for the one build still running rather than all of them.
package prebuild
