package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
)

// cmdExpire writes gpucluster:expiresAt into a stack file: an absolute time, so that plans stay
// reproducible, computed from a duration for convenience. Only that line of the file changes,
// and only once the changed file validates.
func cmdExpire(args []string, stdout, stderr io.Writer) int {
	c := newCLI("expire", "expire (--stack NAME | --config FILE) --in DURATION", stdout, stderr)
	stack := c.fs.String("stack", "", "the stack whose file to change: stacks/Pulumi.<stack>.yaml")
	config := c.fs.String("config", "", "change this stack file instead")
	inText := c.fs.String("in", "", "expire this long from now: "+lifetimeUnits+" (rounded up to the minute)")
	if code, ok := c.parseFlagsOnly(args, func(a string) string { return "--stack " + a + " --in 8h" }); !ok {
		return code
	}
	file, code, ok := c.stackOrConfig(*stack, *config)
	if !ok {
		return code
	}
	if *inText == "" {
		return c.fail("say when the GPU pools stop: --in 8h (%s)", lifetimeUnits)
	}
	in, err := parseLifetime(*inText)
	if err != nil {
		return c.fail("--in %s: %v", *inText, err)
	}
	at := now().UTC().Add(in).Add(time.Minute - time.Nanosecond).Truncate(time.Minute)
	if err := setExpiry(file, at); err != nil {
		fmt.Fprintf(stderr, "gpucluster: %s: %v; nothing changed\n", relative(file), err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %s: %q (GPU pools stop then; run pulumi up -s %s to apply)\n", relative(file), topology.KeyExpiresAt,
		at.Format(time.RFC3339), topology.StackName(file))
	return 0
}

func setExpiry(file string, at time.Time) error {
	info, err := os.Stat(file)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	changed, err := topology.SetConfigScalar(data, topology.KeyExpiresAt, at.Format(time.RFC3339))
	if err != nil {
		return err
	}
	// The changed file must read as the same stack with the new expiry, or nothing is written.
	st, err := topology.ParseStack(file, changed)
	if err != nil {
		var ces topology.ConfigErrors
		if errors.As(err, &ces) {
			return fmt.Errorf("the file does not validate: %v", ces)
		}
		return err
	}
	if st.Expiry != at.Format(time.RFC3339) {
		return fmt.Errorf("the change did not read back as %s", at.Format(time.RFC3339))
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".gpucluster-tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(changed); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), info.Mode().Perm()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// lifetimeUnits are what --in accepts.
const lifetimeUnits = "minutes, hours or days, such as 90m, 8h, 2d or 1d12h"

// parseLifetime reads a positive duration in Go's notation, with days ("2d", "1d12h") as well:
// an ephemeral cluster's lifetime is said in hours and days.
func parseLifetime(s string) (time.Duration, error) {
	var days time.Duration
	rest := s
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("not a duration: use %s", lifetimeUnits)
		}
		days, rest = time.Duration(n)*24*time.Hour, s[i+1:]
	}
	var d time.Duration
	if rest != "" {
		var err error
		if d, err = time.ParseDuration(rest); err != nil {
			return 0, fmt.Errorf("not a duration: use %s", lifetimeUnits)
		}
	}
	if total := days + d; total > 0 && d >= 0 {
		return total, nil
	}
	return 0, fmt.Errorf("the expiry must lie ahead: give a positive duration (%s)", lifetimeUnits)
}
