package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/internal/charts"
)

// testDay is the instant every test of the CLI starts its clock at (TestMain), so that no test
// depends on the day it runs: Kubernetes 1.34 leaves EKS standard support within the week,
// 1.35 and 1.36 are in it (components/topology's standardSupportEnds).
var testDay = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	clock, err := clockFromEnv(testDay.Format(time.RFC3339), time.Now)
	if err != nil {
		panic(err)
	}
	now = clock
	// The plans these tests make leave each chart as its reference: rendering runs
	// gpucluster-charts, which a test here must not build inside its timeout; internal/charts,
	// internal/charts/helmrender and the real-engine tier's plans render them.
	os.Setenv(charts.RendererEnv, charts.RendererOff)
	os.Exit(m.Run())
}

// TestClockFromEnv: no value is the wall clock itself; an instant starts the clock there and it
// runs as the wall clock does; anything else is refused with the variable, the value and a fix.
func TestClockFromEnv(t *testing.T) {
	wall := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	read := func() time.Time { return wall }
	clock, err := clockFromEnv("", read)
	if err != nil || !clock().Equal(wall) {
		t.Errorf("no %s: got %v, %v; want the wall clock %v", envAt, clock(), err, wall)
	}
	clock, err = clockFromEnv("2027-12-06T09:00:00Z", read)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := clock(), time.Date(2027, 12, 6, 9, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("%s=2027-12-06T09:00:00Z reads %v at first, want %v", envAt, got, want)
	}
	wall = wall.Add(90 * time.Second)
	if got, want := clock(), time.Date(2027, 12, 6, 9, 1, 30, 0, time.UTC); !got.Equal(want) {
		t.Errorf("90 s later the clock reads %v, want %v", got, want)
	}
	for _, bad := range []string{"2027-12-06", "tomorrow", "2027-13-01T00:00:00Z"} {
		_, err := clockFromEnv(bad, read)
		if err == nil || !strings.Contains(err.Error(), envAt+"=\""+bad+"\"") || !strings.Contains(err.Error(), "RFC 3339") {
			t.Errorf("%s=%s: got %v, want a refusal naming the variable, its value and the form", envAt, bad, err)
		}
	}
}
