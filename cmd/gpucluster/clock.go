package main

import (
	"fmt"
	"time"
)

// now is the CLI's clock. Every date a command judges a stack on (the support window, the cost,
// the expiry) is read from it once per command and passed down (topology.LoadStack), and the
// deadlines of --wait and bench run are measured on it. main sets it: from the wall clock, the
// one place the CLI reads it (test/conventions keeps it so), or from GPUCLUSTER_AT. Tests set it
// to an instant of their own.
var now = time.Now

// envAt names the variable that starts the clock at a given instant: a plan for the day of a
// later deploy (`GPUCLUSTER_AT=2027-03-01T09:00:00Z gpucluster plan`) prices and warns as on that
// day. The clock then runs on from there, so waits and timeouts still last as long as they say.
const envAt = "GPUCLUSTER_AT"

// clockFromEnv is the clock main installs: wall when value is empty, else a clock that starts
// at the RFC 3339 instant value and runs as wall does.
func clockFromEnv(value string, wall func() time.Time) (func() time.Time, error) {
	if value == "" {
		return wall, nil
	}
	at, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return nil, fmt.Errorf("%s=%q is not an RFC 3339 instant: give one such as %s=2027-03-01T09:00:00Z, or unset it to use this machine's clock", envAt, value, envAt)
	}
	start := wall()
	return func() time.Time { return at.Add(wall().Sub(start)) }, nil
}
