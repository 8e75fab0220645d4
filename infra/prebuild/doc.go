// Package prebuild holds one test package per heavy helper program of the test harnesses: each
// builds its program into the shared cache (internal/buildcache) and checks it runs. They exist
// for `go test ./...` on a fresh machine: go test kills a test binary 11 minutes after it starts
// (its 10-minute timeout and one more), and a test binary that waited for every cold build would
// not survive them. These packages compile in seconds, start early, and each builds one program
// well inside that limit, even beside another; the packages that use the programs (infra/program,
// internal/kubeapi, internal/realengine) then find them built. They live under infra/ because go
// test runs packages in the order of their paths: infra/prebuild comes before infra/program and
// every internal/ package, so the builds happen in these binaries, not inside the users' 11
// minutes (under internal/ they came after internal/kubeapi and infra/program, which then built
// everything themselves and were killed on a cold machine).
package prebuild
